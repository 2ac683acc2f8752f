"""`cleveragents-lsp`: the entry point of the stdio server.

A cold start is dominated by importing pygls (lsprotocol's attrs classes). So this
module imports only light code, starts that import in a worker thread, answers
``initialize`` as soon as it arrives (``handshake.py``), and hands over to the pygls
server once it has loaded. Nothing is read past ``initialize`` until then; the pipe
holds what the client sends meanwhile.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from cleveragents._version import __version__
from cleveragents.config import Settings
from cleveragents.transports import gc_policy, output_limit
from cleveragents.transports.lsp import framing, handshake
from cleveragents.transports.lsp.pipe_writer import PipeWriter, claim_stdout

SERVER_MODULE = "cleveragents.transports.lsp.server"


def configure_logging(level: str) -> None:
    from cleveragents.transports import redaction

    redaction.register_environment(dict(os.environ))
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(redaction.RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # pygls logs whole message bodies at INFO; keep them out unless debugging.
    if root.level > logging.DEBUG:
        logging.getLogger("pygls").setLevel(logging.WARNING)


def add_server_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--workspace", type=Path, help="workspace root (default: the client's root, else the cwd)")
    parser.add_argument("--state-dir", type=Path, help="where the state database lives (default: <workspace>/.cleveragents)")
    parser.add_argument("--memory", action="store_true", help="keep all state in memory (nothing is written)")
    parser.add_argument("--max-terminal-tasks", type=int, metavar="N",
                        help="finished tasks kept before the oldest are evicted (default: 10000)")
    parser.add_argument("--max-message-size", type=int, default=framing.DEFAULT_MAX_MESSAGE_SIZE, metavar="BYTES",
                        help="largest message accepted (default: %(default)s)")
    parser.add_argument("--max-output-buffer", type=int, default=None, metavar="BYTES",
                        help="stdio: output kept for a client that doesn't read before the server gives up on it "
                             f"(default: ${output_limit.MAX_OUTPUT_BUFFER_ENV}, else "
                             f"{output_limit.DEFAULT_MAX_OUTPUT_BUFFER})")
    parser.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                        type=str.upper, help="stderr log level (default: %(default)s)")


async def _serve(args: argparse.Namespace, stdin: Any, stdout: Any, settings: Settings | None = None,
                 container_options: dict[str, Any] | None = None) -> int:
    loading = asyncio.ensure_future(asyncio.to_thread(importlib.import_module, SERVER_MODULE))
    frames = framing.FrameReader(await framing.open_stdin(stdin), args.max_message_size)
    writer = await PipeWriter.open(stdout, getattr(args, "max_output_buffer", None))
    first = await frames.next()
    card = (container_options or {}).get("card")
    agent_card = card.agent_card("1.0") if card is not None else None
    early = handshake.early_initialize(first) if isinstance(first, bytes) else None
    if early is not None:
        writer.write(framing.encode_frame(handshake.initialize_response(*early, agent_card=agent_card)))
    server_module = await loading
    if settings is None:
        settings = settings_from(args)
    server = server_module.A2ALanguageServer(
        settings, workspace_fixed=args.workspace is not None,
        container_options=container_options or {}, agent_card=agent_card,
    )
    gc_policy.tune_for_serving()
    if early is not None:
        return await server.serve(frames, writer, first, answered=early[0])
    return await server.serve(frames, writer, first)


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
    protocol_out = claim_stdout()
    try:
        return asyncio.run(_serve(args, sys.stdin.buffer, protocol_out, settings, container_options))
    except KeyboardInterrupt:
        return 130


def serve_stdio(settings: Settings, *, actor: Any = None, card: Any = None, log_level: str = "WARNING",
                max_message_size: int = framing.DEFAULT_MAX_MESSAGE_SIZE) -> int:
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
