"""What counts as a text file, and how its lines split: one rule for the file tools
and the plan diff, so a file ``fs.read`` shows is never "binary" in a plan's diff."""

from __future__ import annotations

import codecs

CHECK_CHUNK = 1 << 20  # bytes decoded at a time by is_text: the GIL is let go between chunks


def decode_text(data: bytes) -> str | None:
    """The text of a file, or ``None`` when it is binary: a NUL byte anywhere in it
    (UTF-8 text has none) or bytes that are not valid UTF-8. Decoded a chunk at a
    time, as ``is_text`` checks: a 32 MiB file would hold the GIL for tens of ms."""
    if b"\x00" in data:
        return None
    if data.isascii():
        return data.decode("ascii")  # a copy, at memory speed
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(data)
    try:
        parts = [decoder.decode(view[start:start + CHECK_CHUNK]) for start in range(0, len(data), CHECK_CHUNK)]
        parts.append(decoder.decode(b"", final=True))
    except UnicodeDecodeError:
        return None
    return "".join(parts)


def is_text(data: bytes) -> bool:
    """Whether ``decode_text(data)`` would give text, without building the text: a
    search needs only the bytes. Decoded a chunk at a time, so a big file never holds
    the GIL for long (other threads, the event loop's among them, get their turn)."""
    if b"\x00" in data:
        return False
    if data.isascii():
        return True
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(data)
    try:
        for start in range(0, len(data), CHECK_CHUNK):
            decoder.decode(view[start:start + CHECK_CHUNK])
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def split_lines(text: str) -> list[str]:
    """Lines with their endings kept; only ``\\n`` ends a line (``str.splitlines``
    also splits on form feeds and the like, which editors do not count)."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def editor_or_disk(disk: bytes | None, editor: bytes) -> bytes:
    """A file's content as an editor has it (``editor``, its buffer's text as UTF-8),
    or the disk's bytes when the two differ only in line endings: editors hand out
    ``\n`` where the file has ``\r\n``, and that is no change of the user's."""
    if disk is not None and disk != editor and disk.replace(b"\r\n", b"\n") == editor:
        return disk
    return editor
