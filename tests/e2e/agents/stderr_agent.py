"""An agent whose handler writes about 200 KB to stderr for each message, straight to
``sys.stderr`` (``--print``) or as Python warnings (``--warn``), more than a pipe holds."""

import sys
import warnings

from cleveragents import A2A, Agent


async def to_stderr(text: str) -> str:
    for i in range(200):
        if "--warn" in sys.argv:
            warnings.warn(f"warned {i} " + "y" * 1000, stacklevel=1)  # each text its own: none is shown once only
        else:
            print(f"to stderr {i} " + "x" * 1000, file=sys.stderr)
    return text


if __name__ == "__main__":
    A2A(agent=Agent(name="Loud", handler=to_stderr)).serve_stdio(memory="--memory" in sys.argv)
