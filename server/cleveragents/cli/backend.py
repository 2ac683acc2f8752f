"""Where the CLI's A2A calls go: an in-process backend, or a remote server.

Both offer the same two calls: ``call`` (one request, its result) and ``stream`` (a
streaming request, its items as they arrive). Errors come back as ``CallError`` with
the JSON-RPC code, whichever backend raised them.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Protocol

ProgressCallback = Callable[[dict[str, Any]], None]

# The CLI's own failures that have no JSON-RPC code.
UNREACHABLE = "unreachable"
BAD_SETUP = "bad-setup"  # the local backend can't start here: no such workspace, a bad config file
LOCK_FILE = "cli.lock"


class CallError(Exception):
    """A JSON-RPC error answered by the backend (or a failure to reach it)."""

    def __init__(self, code: int | str, message: str, data: Any = None):
        self.code = code
        self.message = message
        self.data = data
        super().__init__(message)


class Backend(Protocol):
    async def call(self, method: str, params: dict[str, Any] | None = None,
                   progress: ProgressCallback | None = None) -> dict[str, Any]: ...

    def stream(self, method: str, params: dict[str, Any]) -> AsyncIterator[dict[str, Any]]: ...


class LocalBackend:
    """The backend in this process, on a workspace and its state directory."""

    def __init__(self, workspace: Path | None, state_dir: Path | None, memory: bool):
        self._options = {"workspace": workspace, "state_dir": state_dir, "memory": memory or None}
        self._ids = itertools.count(1)
        self._container: Any = None
        self._facade: Any = None
        self._lock: Any = None

    async def __aenter__(self) -> LocalBackend:
        from cleveragents.a2a.facade import A2ALocalFacade
        from cleveragents.config import Settings
        from cleveragents.container import Container

        settings = Settings.from_env(**self._options)
        await asyncio.to_thread(_check_setup, settings)
        try:
            if not settings.memory:
                self._lock = await _lock_state_dir(settings.resolved_state_dir)
            # Opening the store is blocking I/O: keep it off the loop.
            self._container = await asyncio.to_thread(Container, settings)
            await self._container.start()
            self._facade = A2ALocalFacade(self._container)
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        if self._container is not None:
            await self._container.aclose()
        if self._facade is not None:
            self._facade.close()
        if self._lock is not None:
            self._lock.close()  # closing the file releases the lock

    async def _dispatch(self, method: str, params: dict[str, Any], context: Any) -> dict[str, Any]:
        request = {"jsonrpc": "2.0", "id": context.request_id, "method": method, "params": params}
        response = (await self._facade.respond(request, context)).to_wire()
        if "error" in response:
            error = response["error"]
            raise CallError(error.get("code", -32603), error.get("message", "error"), error.get("data"))
        return response.get("result") or {}

    def _context(self, notify: Any = None, progress_token: str | None = None) -> Any:
        from cleveragents.a2a.facade import CallContext

        return CallContext(method="", dialect="", request_id=next(self._ids), transport="cli",
                           progress_token=progress_token, notify=notify)

    async def call(self, method: str, params: dict[str, Any] | None = None,
                   progress: ProgressCallback | None = None) -> dict[str, Any]:
        context = self._context()
        if progress is not None:
            token = f"cli-{context.request_id}"
            context.progress_token = token
            context.notify = lambda name, body: progress(body["value"]) if body.get("token") == token else None
        return await self._dispatch(method, params or {}, context)

    async def stream(self, method: str, params: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        items: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        context = self._context()

        def notify(name: str, body: dict[str, Any]) -> None:
            if body.get("requestId") == context.request_id:
                items.put_nowait({k: v for k, v in body.items() if k != "requestId"})

        context.notify = notify
        call = asyncio.ensure_future(self._dispatch(method, params, context))
        try:
            while not (call.done() and items.empty()):
                getter = asyncio.ensure_future(items.get())
                await asyncio.wait({getter, call}, return_when=asyncio.FIRST_COMPLETED)
                if getter.done():
                    yield getter.result()
                else:
                    getter.cancel()
            call.result()  # raises the call's error, if it failed
        finally:
            if not call.done():
                call.cancel()


def _card_verifier() -> Any:
    """How the server's card is checked: the environment's card signature policy
    (docs/security.md); None when it is off."""
    from cleveragents.a2a.card_keys import CardKeyError
    from cleveragents.a2a.card_signing import verifier_from_settings
    from cleveragents.config import Settings

    try:
        return verifier_from_settings(Settings.from_env())
    except (CardKeyError, ValueError) as exc:
        raise CallError(BAD_SETUP, f"card signature settings: {exc}") from None


def _check_setup(settings: Any) -> None:
    """Refuse, before anything is created, a workspace that isn't there (it would be
    made, with a state directory in it) or a bad configuration file (the servers'
    one line, as ``cleveragents-lsp`` prints it)."""
    from cleveragents.container.configured import configuration_problem

    if not settings.resolved_workspace.is_dir():
        raise CallError(BAD_SETUP, f"the workspace {settings.resolved_workspace} is not a directory")
    if (problem := configuration_problem(settings)) is not None:
        raise CallError(BAD_SETUP, problem)


async def _lock_state_dir(state_dir: Path) -> Any:
    """One local backend at a time per state directory: a backend's start-up repair
    treats plans that are running as interrupted, so two must not overlap."""
    import fcntl
    import sys

    state_dir.mkdir(parents=True, exist_ok=True)
    lock = open(state_dir / LOCK_FILE, "a+b")  # noqa: SIM115 - held until the backend closes
    try:
        waited = False
        while True:
            try:
                fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                return lock
            except BlockingIOError:
                if not waited:
                    sys.stderr.write(f"agents: waiting for another agents command using {state_dir}\n")
                    waited = True
                await asyncio.sleep(0.1)
    except BaseException:
        lock.close()
        raise


class RemoteBackend:
    """A CleverAgents / A2A server over HTTP, through the outbound client."""

    def __init__(self, url: str, token: str | None, timeout: float):
        self._url, self._token, self._timeout = url, token, timeout
        self._client: Any = None

    async def __aenter__(self) -> RemoteBackend:
        import pydantic

        from cleveragents.a2a.client import ServerConnectionConfig

        try:
            config = ServerConnectionConfig(url=self._url, token=self._token or None, timeout_seconds=self._timeout)
        except pydantic.ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise CallError(-32602, f"bad --server/--token: {problems}") from None
        try:
            from cleveragents.a2a.client import A2AClient
        except ImportError:
            raise CallError(UNREACHABLE, "this build has no remote client (cleveragents.a2a.client.A2AClient)") from None
        self._client = A2AClient(config, card_verifier=_card_verifier())
        await self._guarded(self._client.__aenter__())
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        if self._client is not None:
            await self._client.__aexit__(*exc_info)

    async def _guarded(self, awaitable: Any) -> Any:
        try:
            return await awaitable
        except Exception as exc:
            raise _as_call_error(exc, self._url) from None

    async def call(self, method: str, params: dict[str, Any] | None = None,
                   progress: ProgressCallback | None = None) -> dict[str, Any]:
        # Work-done progress needs a push channel; a plain HTTP call has none.
        result = await self._guarded(self._client.call(method, params or {}))
        return result if isinstance(result, dict) else {"result": result}

    async def stream(self, method: str, params: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        items = self._client.call_stream(method, params)
        try:
            while True:
                try:
                    item = await items.__anext__()
                except StopAsyncIteration:
                    return
                except Exception as exc:
                    raise _as_call_error(exc, self._url) from None
                yield item
        finally:
            await items.aclose()


def _as_call_error(exc: Exception, url: str) -> CallError:
    if isinstance(exc, CallError):
        return exc
    # Refused, reset, timed out: the client's errors for these are OSErrors.
    if isinstance(exc, OSError) or type(exc).__name__ in {"ConnectError", "ConnectTimeout", "ReadTimeout"}:
        return CallError(UNREACHABLE, str(exc) if url in str(exc) else f"cannot reach {url}: {exc or type(exc).__name__}")
    code = getattr(exc, "code", None)
    if isinstance(code, int):
        message = str(getattr(exc, "message", None) or exc).removesuffix(f" (code {code})")
        return CallError(code, message, getattr(exc, "data", None))
    from cleveragents.a2a import dialects
    from cleveragents.a2a.errors import error_payload, is_known

    if is_known(exc):
        payload = error_payload(exc, dialects.EXTENSION)
        return CallError(payload["code"], getattr(exc, "message", None) or payload["message"], payload.get("data"))
    raise exc


def open_backend(args: argparse.Namespace) -> Any:
    """The backend the options name: ``--server URL`` (remote) or the local one."""
    if args.server:
        return RemoteBackend(args.server, args.token, args.timeout)
    return LocalBackend(args.workspace, args.state_dir, args.memory)
