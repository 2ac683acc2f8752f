"""A server of its own, in this process: the container and the facade, no transport."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any


@asynccontextmanager
async def in_process(workspace: Path, **settings: Any) -> AsyncIterator[Callable[..., Any]]:
    """``await call(method, params)`` on a server of its own, in this process, with its
    store in memory; ``settings`` go to its ``Settings``."""
    from cleveragents.a2a.facade import A2ALocalFacade
    from cleveragents.config import Settings
    from cleveragents.container import Container

    container = Container(Settings(workspace=workspace, memory=True, **settings))
    facade = A2ALocalFacade(container)
    ids = iter(range(1, 1_000_000))

    async def call(method: str, params: dict[str, Any]) -> dict[str, Any]:
        return (await facade.dispatch({"jsonrpc": "2.0", "id": next(ids), "method": method, "params": params})).to_wire()

    try:
        yield call
    finally:
        await container.aclose()
        facade.close()
