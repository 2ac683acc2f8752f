"""An agent for the replica tests: its answers take a while, a chunk ("tick N") every
quarter second for argv[3] seconds (to see what happens meanwhile). Served over HTTP on
127.0.0.1 and a free port, with the settings the environment gives
(``CLEVERAGENTS_STORE`` to share a database)."""

import asyncio
import sys

from cleveragents import A2A, Agent

TICK = 0.25


async def slow(text: str):
    for n in range(max(1, round(float(sys.argv[3]) / TICK))):
        await asyncio.sleep(TICK)
        yield f"tick {n} "


if __name__ == "__main__":
    sys.exit(A2A(agent=Agent(name="Slow", handler=slow), auth_token=sys.argv[1]).serve(port=0, workspace=sys.argv[2]))
