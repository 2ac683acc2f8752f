"""`cleveragents-lsp`: the entry point of the stdio server.

It serves two framings: LSP's (``Content-Length`` headers; the A2A methods) and the
Agent Client Protocol's (newline-delimited JSON-RPC; ``transports/agent_client``).
The client's first byte tells them apart (``sniff.py``), unless ``--protocol`` says
which; only the chosen server's code is imported.

A cold start is dominated by imports: the services' (pydantic models, the store) and
pygls's (lsprotocol's attrs classes). So this module imports only light code and
loads the rest in a worker thread, one thing at a time (imports hold the GIL, and two
loading side by side only slow the first answers): it answers ``initialize`` as soon
as it arrives (``handshake.py``), health checks from the store's file opened on its
own (``early_health.py``), then the services load, and A2A requests that need
nothing of the LSP layer are answered once they are up (``early.py``); it hands over
to the pygls server once that has loaded, last.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import contextlib
import importlib
import logging
import os
import signal
import sys
from collections.abc import Awaitable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from cleveragents._version import __version__
from cleveragents.config import Settings
from cleveragents.transports import gc_policy
from cleveragents.transports.lsp import early, early_health, framing, handshake, sniff
from cleveragents.transports.lsp.calls import Connection
from cleveragents.transports.lsp.pipe_writer import PipeWriter, claim_stdout
from cleveragents.transports.runtime import ServiceRuntime
from cleveragents.transports.serving import DEFAULT_MAX_MESSAGE_SIZE, add_server_arguments, configure_logging

if TYPE_CHECKING:  # loaded in a worker thread, once the services are up
    from cleveragents.transports.lsp.server import A2ALanguageServer

SERVER_MODULE = "cleveragents.transports.lsp.server"
AGENT_CLIENT_MODULE = "cleveragents.transports.agent_client.server"
SERVICE_MODULES = ("cleveragents.container", "cleveragents.a2a.facade")
# Seconds the client's first message may take before the services load while waiting
# for it (input already in the pipe is read well within one loop pass).
LATE_INPUT = 0.01
_T = TypeVar("_T")
# What stops a server whose client did not say `exit`: an editor's forced stop, a
# closing terminal, Ctrl-C.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
_stopped_by: list[int] = []  # the stop signal received, if one was
TERMINAL_HINT = ("cleveragents-lsp: waiting for an editor to speak LSP-framed JSON-RPC (or the Agent Client "
                 "Protocol) on stdin; start it from an editor instead (docs/getting-started.md, docs/editors.md). "
                 "Ctrl-D stops it.")


def _stdin_is_a_terminal() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except ValueError:  # stdin closed
        return False


async def _serve_until_stopped(args: argparse.Namespace, stdin: Any, stdout: Any, settings: Settings | None = None,
                               container_options: dict[str, Any] | None = None) -> int:
    """``_serve``, cancelled by the first of ``STOP_SIGNALS``: the servers stop as at the
    end of their input (services closed, temporary files removed), without waiting for
    their requests. Then 128 + the signal's number, as a shell reports it."""
    loop = asyncio.get_running_loop()
    serving = asyncio.current_task()
    assert serving is not None
    _stopped_by.clear()

    def stop(signum: int) -> None:
        if not _stopped_by:
            _stopped_by.append(signum)
            serving.cancel()

    for signum in STOP_SIGNALS:
        loop.add_signal_handler(signum, stop, signum)
    try:
        return await _serve(args, stdin, stdout, settings, container_options)
    except asyncio.CancelledError:
        if not _stopped_by:
            raise
        serving.uncancel()
        return 128 + _stopped_by[0]
    finally:
        for signum in STOP_SIGNALS:
            loop.remove_signal_handler(signum)


async def _serve(args: argparse.Namespace, stdin: Any, stdout: Any, settings: Settings | None = None,
                 container_options: dict[str, Any] | None = None) -> int:
    gc_policy.share_the_gil()
    services = _ServicesLoading()
    protocol = getattr(args, "protocol", None)
    reader = await framing.open_stdin(stdin)
    head = b""
    if protocol not in sniff.PROTOCOLS:
        protocol, head = await services.while_waiting(sniff.detect(reader))
        if protocol is None:
            return 0  # end of input before a message: nothing to serve
    writer = await PipeWriter.open(stdout, getattr(args, "max_output_buffer", None))
    if protocol == sniff.ACP:
        services.start()
        return await _serve_agent_client(args, reader, head, writer, settings, container_options)
    frames: framing.Frames = framing.FrameReader(reader, args.max_message_size, pending=head)
    first = await services.while_waiting(frames.next())
    options = {**(container_options or {}), "max_message_size": args.max_message_size}
    card = options.get("card")
    agent_card = card.agent_card("1.0") if card is not None else None
    if settings is None:
        settings = settings_from(args)
    initialize = handshake.early_initialize(first) if isinstance(first, bytes) else None
    health = early_health.EarlyHealth() if initialize is not None else None
    runtime = ServiceRuntime(settings=settings, container_options=options,
                             before_build=health.before_build if health is not None else None)
    calls: early.EarlyCalls | None = None
    try:
        if initialize is None:
            server_module = await _load_server_after(services.start())
        else:
            msg_id, params = initialize
            writer.write(framing.encode_frame(handshake.initialize_response(msg_id, params, agent_card=agent_card)))
            if args.workspace is None and (root := handshake.workspace_root(params)) is not None:
                runtime.settings = replace(settings, workspace=root)
            options_sent = params.get("initializationOptions")
            connection = Connection(handshake.requested_version(options_sent),
                                    handshake.connection_extensions(options_sent))
            calls = early.EarlyCalls(runtime, connection, writer, health)
            starting = runtime.start()
            starting.add_done_callback(health.services_started)  # type: ignore[union-attr]
            loading = asyncio.ensure_future(_load_server_after(starting, params))
            frames = await early.serve_until_loaded(frames, calls, loading)
            server_module = await loading
    except BaseException:  # a stop signal before the pygls server took over: it would have closed them
        runtime.stopping()
        if calls is not None:
            await calls.cancel_all()
        await runtime.aclose()
        raise
    server: A2ALanguageServer = server_module.A2ALanguageServer(
        settings, workspace_fixed=args.workspace is not None,
        container_options=options, agent_card=agent_card, runtime=runtime,
    )
    gc_policy.tune_for_serving()
    if initialize is not None and calls is not None:
        return await server.serve(frames, writer, first, answered=initialize[0], running=calls.hand_over())
    return await server.serve(frames, writer, first)


class _ServicesLoading:
    """The services' modules, loaded while the client's first message is late.

    A message already in the pipe (an editor writes ``initialize`` as it spawns the
    server) is read at once, and then the services load after the early health
    check's store is open (``runtime.start()``, ``early_health.py``): imports hold the
    GIL, and loading them beside it would delay the first answers. A client that is
    slow to write gets them loaded while it is."""

    def __init__(self) -> None:
        self._loading: asyncio.Future[Any] | None = None

    def start(self) -> asyncio.Future[Any]:
        if self._loading is None:
            self._loading = _load(*SERVICE_MODULES)
        return self._loading

    async def while_waiting(self, reading: Awaitable[_T]) -> _T:
        task = asyncio.ensure_future(reading)
        done, _ = await asyncio.wait({task}, timeout=LATE_INPUT)
        if not done:
            self.start()
        return await task


def _load(*modules: str) -> asyncio.Future[Any]:
    """Import ``modules`` in a worker thread (imports are most of a cold start)."""
    return asyncio.ensure_future(asyncio.to_thread(_import_all, modules))


def _import_all(names: Sequence[str]) -> Any:
    """The last module of ``names``, once each is imported."""
    module = None
    for name in names:
        module = importlib.import_module(name)
    return module


async def _load_server_after(services: Awaitable[Any], initialize_params: Any = None) -> Any:
    """The pygls server's module, imported once the services are up (or failed: the
    server reports that to the requests that need them), and its converter made for
    this client's ``initialize``, in a worker thread too (``prepare_converter``)."""
    with contextlib.suppress(Exception):
        await services
    module = await _load(SERVER_MODULE)
    await asyncio.to_thread(_prepare_converter, initialize_params)
    return module


def _prepare_converter(initialize_params: Any) -> None:
    from cleveragents.transports.lsp.pygls_hooks import prepare_converter  # loaded with the server

    prepare_converter(initialize_params)


async def _serve_agent_client(args: argparse.Namespace, reader: Any, head: bytes, writer: PipeWriter,
                              settings: Settings | None, container_options: dict[str, Any] | None) -> int:
    server_module = await _load(AGENT_CLIENT_MODULE)
    card = (container_options or {}).get("card")
    name = getattr(card, "name", None) if card is not None else None
    return await server_module.serve(  # type: ignore[no-any-return]
        reader, head, writer, settings or settings_from(args), max_message_size=args.max_message_size,
        workspace_fixed=args.workspace is not None, container_options=container_options or {},
        agent_name=name if isinstance(name, str) and name else "cleveragents")


def settings_from(args: argparse.Namespace) -> Settings:
    return Settings.from_env(workspace=args.workspace, state_dir=args.state_dir, memory=args.memory or None,
                             store=getattr(args, "store", None), max_terminal_tasks=getattr(args, "max_terminal_tasks", None))


def run_stdio(args: argparse.Namespace, settings: Settings | None = None,
              container_options: dict[str, Any] | None = None, *, die_of_stop_signal: bool = False) -> int:
    """Serve on this process's stdio; the exit code. ``die_of_stop_signal``: a process
    that is only this server ends, after its exit, by the stop signal it received."""
    if die_of_stop_signal:
        atexit.register(_die_of_stop_signal)  # before the services register theirs: it runs after them
    configure_logging(args.log_level)
    # A workspace the client names in `initialize` is checked when the services start.
    from cleveragents.container.configured import configuration_problem

    try:
        settings = settings or settings_from(args)
    except ValueError as exc:  # a setting out of range, from the command line or the environment
        print(f"cleveragents-lsp: {exc}", file=sys.stderr)
        return 2
    if (problem := configuration_problem(settings)) is not None:
        print(f"cleveragents-lsp: {problem}", file=sys.stderr)  # one line; nothing was started
        return 2
    if _stdin_is_a_terminal():
        # Run by hand, a silent server looks hung; an editor's pipe never sees this.
        print(TERMINAL_HINT, file=sys.stderr, flush=True)
    protocol_out = claim_stdout()
    try:
        return asyncio.run(_serve_until_stopped(args, sys.stdin.buffer, protocol_out, settings, container_options))
    except KeyboardInterrupt:  # Ctrl-C before the loop ran
        return 128 + signal.SIGINT


def _die_of_stop_signal() -> None:
    """Last at exit, once the services are closed and their files removed: end by the
    stop signal, as a process it ended does, so the parent sees the signal, not an
    exit code (Neovim warns of any exit code but 0, and of no SIGTERM)."""
    if not _stopped_by:
        return
    logging.shutdown()  # registered before this, so it would run after: the log's last lines
    sys.stderr.flush()
    signal.signal(_stopped_by[0], signal.SIG_DFL)
    os.kill(os.getpid(), _stopped_by[0])


def serve_stdio(settings: Settings, *, actor: Any = None, card: Any = None, log_level: str = "WARNING",
                max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> int:
    """Serve a published agent (``cleveragents.A2A(...).serve_stdio()``) on this
    process's stdio until the client exits; returns the exit code."""
    args = argparse.Namespace(workspace=settings.workspace, state_dir=settings.state_dir, memory=settings.memory,
                              max_message_size=max_message_size, log_level=log_level.upper())
    return run_stdio(args, settings, {"actor": actor, "card": card})


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cleveragents-lsp",
                                     description="The CleverAgents backend on stdio: A2A methods over LSP framing, "
                                                 "or the Agent Client Protocol (told apart by the first byte).")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--stdio", action="store_true", help="accepted for editor compatibility; stdio is the transport")
    parser.add_argument("--protocol", choices=sniff.PROTOCOLS, default=None,
                        help="the stdio framing: lsp (Content-Length headers) or acp (the Agent Client Protocol, "
                             "one JSON message a line); default: told from the client's first byte")
    add_server_arguments(parser)
    return run_stdio(parser.parse_args(argv), die_of_stop_signal=True)


if __name__ == "__main__":
    sys.exit(main())
