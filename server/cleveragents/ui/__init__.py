"""The user-facing side of A2A: ``cleveragents.ui.a2a`` (serve an agent, call one)
and ``cleveragents.ui.a2ui`` (A2UI payloads an agent may send)."""
