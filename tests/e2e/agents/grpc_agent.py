"""A published agent served over HTTP and gRPC on free ports, with a token:
``python grpc_agent.py TOKEN``."""

import sys

from cleveragents import A2A, Agent, Turn


async def shout(text: str, turn: Turn):
    if text == "who":  # who the gRPC call was authenticated as
        yield turn.caller.scheme if turn.caller is not None else "no one"
        return
    yield text.upper()
    yield "!"


if __name__ == "__main__":
    sys.exit(A2A(agent=Agent(name="Shouter", handler=shout), auth_token=sys.argv[1]).serve(
        port=0, grpc_port=0, memory=True))
