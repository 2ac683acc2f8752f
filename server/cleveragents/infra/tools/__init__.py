"""The built-in tools a plan step can call: files, patches and commands."""
