"""A sync handler that returns only once PARTIES calls wait at the barrier together:
every call succeeds only if the server runs PARTIES of them at once."""

import sys
import threading

from cleveragents import A2A, Agent

PARTIES = 16
barrier = threading.Barrier(PARTIES, timeout=10)


def meet(text: str) -> str:
    barrier.wait()  # a broken barrier raises, and the task fails
    return f"{text}: met {PARTIES - 1} others"


if __name__ == "__main__":
    A2A(agent=Agent(name="Sync barrier", handler=meet)).serve_stdio(memory="--memory" in sys.argv)
