"""An agent whose handler prints about 200 KB to stdout for each message: once stdout
carries the protocol, that goes to stderr."""

import sys

from cleveragents import A2A, Agent


async def chatty(text: str) -> str:
    for i in range(200):
        print(f"printed {i} " + "x" * 1000)
    return text


if __name__ == "__main__":
    A2A(agent=Agent(name="Chatty", handler=chatty)).serve_stdio(memory="--memory" in sys.argv)
