"""An agent that asks "Which file?" on a task's first turn and answers on the next."""

import sys

from cleveragents import A2A, Agent, InputRequired


async def ask_then_answer(text: str, turn):
    if not turn.history:
        return InputRequired("Which file?")
    return f"Reading {text}."


if __name__ == "__main__":
    A2A(agent=Agent(name="Asker", handler=ask_then_answer)).serve_stdio(memory="--memory" in sys.argv)
