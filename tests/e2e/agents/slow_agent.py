"""An agent whose answers take a while (argv[3] seconds; for tests of what happens
meanwhile), served over HTTP on 127.0.0.1 and a free port, with the settings the
environment gives (``CLEVERAGENTS_STORE`` to share a database)."""

import asyncio
import sys

from cleveragents import A2A, Agent


async def slow(text: str) -> str:
    await asyncio.sleep(float(sys.argv[3]))
    return text


if __name__ == "__main__":
    sys.exit(A2A(agent=Agent(name="Slow", handler=slow), auth_token=sys.argv[1]).serve(port=0, workspace=sys.argv[2]))
