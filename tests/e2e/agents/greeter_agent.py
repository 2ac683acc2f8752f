"""An agent that answers "hello" with a message alone (no task) and works anything else
as a task: a handler decides per message."""

import sys

from cleveragents import A2A, Agent, Message


async def greet(text: str):
    if text == "hello":
        return Message("hi there", metadata={"greeting": True})
    return f"working on {text}"


if __name__ == "__main__":
    A2A(agent=Agent(name="Greeter", handler=greet)).serve_stdio(memory="--memory" in sys.argv)
