"""An echo agent that requires an extension (and declares an optional one)."""

import sys

from cleveragents import A2A, Agent, AgentExtension

SIGNED = "https://example.com/ext/signed/v1"
TRACE = "https://example.com/ext/trace/v1"


def echo(text: str) -> str:
    return text


if __name__ == "__main__":
    agent = Agent(name="Signed echo", handler=echo, extensions=[AgentExtension(TRACE, "Traces each step")])
    a2a = A2A(agent=agent, extensions=[AgentExtension(SIGNED, "Messages carry a signature", required=True)])
    a2a.serve_stdio(memory="--memory" in sys.argv)
