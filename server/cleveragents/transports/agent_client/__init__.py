"""The Agent Client Protocol (ACP, as Zed and other editors speak it) on stdio.

Not to be confused with ``cleveragents.acp``, the old name of the A2A package. This
transport serves ACP's newline-delimited JSON-RPC over the same services as the A2A
methods; ``cleveragents-lsp`` picks it when the client's first byte is ``{``
(``transports/lsp/sniff.py``) or on ``--protocol acp``. Docs: docs/agent-client-protocol.md.
"""
