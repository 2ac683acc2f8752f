"""An async handler that returns only once PARTIES calls wait at the barrier together:
every call succeeds only if the server runs PARTIES of them at once."""

import asyncio
import sys

from cleveragents import A2A, Agent

PARTIES = 16
barrier = asyncio.Barrier(PARTIES)


async def meet(text: str) -> str:
    async with asyncio.timeout(10):  # fewer callers at once: a timeout, and the task fails
        await barrier.wait()
    return f"{text}: met {PARTIES - 1} others"


if __name__ == "__main__":
    A2A(agent=Agent(name="Async barrier", handler=meet)).serve_stdio(memory="--memory" in sys.argv)
