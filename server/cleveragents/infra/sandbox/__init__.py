"""The command sandbox: what a ``shell.run`` command may see and change (docs/security.md).

``command.py`` is the server's side, ``launcher.py`` (with ``landlock.py`` and
``linux.py``, standard library only) the process that builds the sandbox and starts
the command in it.
"""
