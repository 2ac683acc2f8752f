"""An agent that streams its reply in CHUNKS pieces, one every DELAY seconds."""

import asyncio
import sys

from cleveragents import A2A, Agent

CHUNKS = 5
DELAY = 0.15


async def count_slowly(text: str):
    for n in range(CHUNKS):
        await asyncio.sleep(DELAY)
        yield f"chunk {n};"


if __name__ == "__main__":
    A2A(agent=Agent(name="Slow", handler=count_slowly)).serve_stdio(memory="--memory" in sys.argv)
