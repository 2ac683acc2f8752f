"""An agent that answers each message with its own text (the benchmark's agent)."""

import sys

from cleveragents import A2A, Agent


async def echo(text: str) -> str:
    return text


if __name__ == "__main__":
    A2A(agent=Agent(name="Echo", handler=echo)).serve_stdio(memory="--memory" in sys.argv)
