"""`cleveragents-lsp`: the entry point of the stdio server.

A cold start is dominated by imports: the services' (pydantic models, the store) and
pygls's (lsprotocol's attrs classes). So this module imports only light code and
loads the rest in a worker thread, the services first: it answers ``initialize`` as
soon as it arrives (``handshake.py``), then A2A requests that need nothing of the
LSP layer once the services are up (``early.py``), and hands over to the pygls
server once that has loaded.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import sys
from collections.abc import Awaitable, Sequence
from dataclasses import replace
from typing import Any

from cleveragents._version import __version__
from cleveragents.config import Settings
from cleveragents.transports import gc_policy
from cleveragents.transports.lsp import early, framing, handshake
from cleveragents.transports.lsp.calls import Connection
from cleveragents.transports.lsp.pipe_writer import PipeWriter, claim_stdout
from cleveragents.transports.runtime import ServiceRuntime
from cleveragents.transports.serving import DEFAULT_MAX_MESSAGE_SIZE, add_server_arguments, configure_logging

SERVER_MODULE = "cleveragents.transports.lsp.server"
SERVICE_MODULES = ("cleveragents.container", "cleveragents.a2a.facade")
TERMINAL_HINT = ("cleveragents-lsp: waiting for an editor to speak LSP-framed JSON-RPC on stdin; start it "
                 "from an editor instead (docs/getting-started.md, docs/editors.md). Ctrl-D stops it.")


def _stdin_is_a_terminal() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except ValueError:  # stdin closed
        return False


async def _serve(args: argparse.Namespace, stdin: Any, stdout: Any, settings: Settings | None = None,
                 container_options: dict[str, Any] | None = None) -> int:
    # The services' modules load while the client's initialize is on its way, pygls after them.
    services_loading = asyncio.ensure_future(asyncio.to_thread(_import_all, SERVICE_MODULES))
    frames: framing.Frames = framing.FrameReader(await framing.open_stdin(stdin), args.max_message_size)
    writer = await PipeWriter.open(stdout, getattr(args, "max_output_buffer", None))
    first = await frames.next()
    options = container_options or {}
    card = options.get("card")
    agent_card = card.agent_card("1.0") if card is not None else None
    if settings is None:
        settings = settings_from(args)
    runtime = ServiceRuntime(settings=settings, container_options=options)
    initialize = handshake.early_initialize(first) if isinstance(first, bytes) else None
    if initialize is None:
        server_module = await _load_server_after(services_loading)
    else:
        msg_id, params = initialize
        writer.write(framing.encode_frame(handshake.initialize_response(msg_id, params, agent_card=agent_card)))
        if args.workspace is None and (root := handshake.workspace_root(params)) is not None:
            runtime.settings = replace(settings, workspace=root)
        options_sent = params.get("initializationOptions")
        connection = Connection(handshake.requested_version(options_sent), handshake.connection_extensions(options_sent))
        calls = early.EarlyCalls(runtime, connection, writer)
        loading = asyncio.ensure_future(_load_server_after(runtime.start()))
        frames = await early.serve_until_loaded(frames, calls, loading)
        server_module = await loading
    server = server_module.A2ALanguageServer(
        settings, workspace_fixed=args.workspace is not None,
        container_options=options, agent_card=agent_card, runtime=runtime,
    )
    gc_policy.tune_for_serving()
    if initialize is not None:
        return await server.serve(frames, writer, first, answered=initialize[0], running=calls.hand_over())
    return await server.serve(frames, writer, first)


def _import_all(names: Sequence[str]) -> None:
    for name in names:
        importlib.import_module(name)


async def _load_server_after(services: Awaitable[Any]) -> Any:
    """The pygls server's module, imported once the services are up (or failed: the
    server reports that to the requests that need them)."""
    with contextlib.suppress(Exception):
        await services
    return await asyncio.to_thread(importlib.import_module, SERVER_MODULE)


def settings_from(args: argparse.Namespace) -> Settings:
    return Settings.from_env(workspace=args.workspace, state_dir=args.state_dir, memory=args.memory or None,
                             max_terminal_tasks=getattr(args, "max_terminal_tasks", None))


def run_stdio(args: argparse.Namespace, settings: Settings | None = None,
              container_options: dict[str, Any] | None = None) -> int:
    configure_logging(args.log_level)
    # A workspace the client names in `initialize` is checked when the services start.
    from cleveragents.container import configuration_problem

    if (problem := configuration_problem(settings or settings_from(args))) is not None:
        print(f"cleveragents-lsp: {problem}", file=sys.stderr)  # one line; nothing was started
        return 2
    if _stdin_is_a_terminal():
        # Run by hand, a silent server looks hung; an editor's pipe never sees this.
        print(TERMINAL_HINT, file=sys.stderr, flush=True)
    protocol_out = claim_stdout()
    try:
        return asyncio.run(_serve(args, sys.stdin.buffer, protocol_out, settings, container_options))
    except KeyboardInterrupt:
        return 130


def serve_stdio(settings: Settings, *, actor: Any = None, card: Any = None, log_level: str = "WARNING",
                max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> int:
    """Serve a published agent (``cleveragents.A2A(...).serve_stdio()``) on this
    process's stdio until the client exits; returns the exit code."""
    args = argparse.Namespace(workspace=settings.workspace, state_dir=settings.state_dir, memory=settings.memory,
                              max_message_size=max_message_size, log_level=log_level.upper())
    return run_stdio(args, settings, {"actor": actor, "card": card})


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cleveragents-lsp",
                                     description="The CleverAgents A2A backend on stdio (LSP framing).")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--stdio", action="store_true", help="accepted for editor compatibility; stdio is the transport")
    add_server_arguments(parser)
    return run_stdio(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
