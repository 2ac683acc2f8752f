"""A peer's body read up to a limit, from its chunks (an HTTP response's
``aiter_bytes``): the A2A client's answers and cards, the model actor's answers. What
lies past the limit is never kept, however much the peer sends.
"""

from __future__ import annotations

from collections.abc import AsyncIterable


async def read_up_to(chunks: AsyncIterable[bytes], limit: int) -> tuple[bytes, bool]:
    """The first ``limit`` bytes of ``chunks``, and whether there were more; reading
    stops at the first chunk past the limit."""
    kept: list[bytes] = []
    size = 0
    async for chunk in chunks:
        if size + len(chunk) > limit:
            kept.append(chunk[:limit - size])
            return b"".join(kept), True
        kept.append(chunk)
        size += len(chunk)
    return b"".join(kept), False
