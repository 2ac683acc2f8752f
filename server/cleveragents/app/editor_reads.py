"""Files as the caller's editor has them (``CallContext.reader``), for plans and turns.

Tools run in worker threads and read synchronously; the editor answers on the event
loop. ``read_through`` bridges the two for a plan's overlay; ``editor_texts`` reads
the files a plan changes, for its diff and its apply's checks. A task's turn carries
its caller's reader in ``TURN_READER`` (set for the turn's asyncio task), so the view
its tools get (``turn_read_through``) reads through the editor too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar

from cleveragents.app.calls import CallContext, FileReader

logger = logging.getLogger(__name__)

READ_TIMEOUT_SECONDS = 30.0
# The reader of the turn being worked on, and the loop it answers on.
TURN_READER: ContextVar[tuple[FileReader, asyncio.AbstractEventLoop] | None] = ContextVar("turn_reader", default=None)


def reader_of(context: CallContext | None) -> FileReader | None:
    return context.reader if context is not None else None


def read_through(reader: FileReader, root: str,
                 loop: asyncio.AbstractEventLoop) -> Callable[[str], bytes | None]:
    """A workspace-relative path's text from the editor, as UTF-8; ``None`` when the
    editor gives none, is slow, or this is the loop's own thread (it would wait on
    itself)."""

    def read(relative: str) -> bytes | None:
        try:
            asyncio.get_running_loop()
            return None  # on a loop: never block it
        except RuntimeError:
            pass
        future = asyncio.run_coroutine_threadsafe(_text(reader, os.path.join(root, relative)), loop)
        try:
            return future.result(READ_TIMEOUT_SECONDS)
        except Exception:  # the editor went away or took too long: the disk answers
            future.cancel()
            return None

    return read


async def editor_texts(reader: FileReader, root: str, paths: Iterable[str]) -> dict[str, bytes]:
    """The editor's text of each path it has one for."""
    found: dict[str, bytes] = {}
    for path in paths:
        text = await _text(reader, os.path.join(root, path))
        if text is not None:
            found[path] = text
    return found


async def _text(reader: FileReader, path: str) -> bytes | None:
    try:
        text = await asyncio.wait_for(reader.read_text(path), READ_TIMEOUT_SECONDS)
    except Exception as exc:
        logger.info("the editor gave no text for %s: %s", path, type(exc).__name__)
        return None
    return text.encode("utf-8") if isinstance(text, str) else None


@contextlib.contextmanager
def turn_reading(reader: FileReader | None) -> Iterator[None]:
    """For the turn run inside: its tools read through ``reader`` (nothing without one)."""
    if reader is None:
        yield
        return
    token = TURN_READER.set((reader, asyncio.get_running_loop()))
    try:
        yield
    finally:
        TURN_READER.reset(token)


def turn_read_through(root: str) -> Callable[[str], bytes | None] | None:
    """The current turn's ``read_through`` for a view of ``root``; ``None`` outside one."""
    current = TURN_READER.get()
    return None if current is None else read_through(current[0], root, current[1])
