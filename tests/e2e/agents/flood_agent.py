"""An agent that streams CHUNKS pieces of CHUNK_BYTES each as fast as it can, served
over HTTP on the port given (0: any; the bound port goes to stderr)."""

import asyncio
import sys

from cleveragents import A2A, Agent

CHUNKS = 4000
CHUNK_BYTES = 64 * 1024


async def flood(text: str):
    for n in range(CHUNKS):
        yield f"{n:06d}" + "x" * (CHUNK_BYTES - 6)
        await asyncio.sleep(0)  # other requests still get their turn


if __name__ == "__main__":
    A2A(agent=Agent(name="Flood", handler=flood)).serve(port=int(sys.argv[1]), memory=True)
