"""An agent that shows each kind of reply: "reject ..." rejects the task, "ask" asks
which file and answers on the next message, "data" adds a data artifact, "meta"
answers with what it read of the incoming message, anything else is echoed.
``--reply-as artifact|message|both`` picks how the text reply is delivered."""

import json
import sys

from cleveragents import A2A, Agent, InputRequired, TaskRejected


async def reply(text: str, turn):
    if text.startswith("reject"):
        raise TaskRejected("I only read files.")
    if text == "ask" and not turn.history:
        yield InputRequired("Which file?")
        return
    if turn.history and turn.history[0].text() == "ask":  # the answer to the question
        yield f"Reading {text}."
        return
    if text == "data":
        yield {"count": 3}
        yield "three"
        return
    if text == "meta":
        incoming = turn.message
        yield json.dumps({"messageId": incoming.message_id, "taskId": incoming.task_id == turn.task_id,
                          "metadata": incoming.metadata, "kinds": [part.kind for part in incoming.parts]})
        return
    yield f"echo {text}"


def agent(reply_as: str = "artifact") -> Agent:
    return Agent(name="Replier", handler=reply, reply_as=reply_as)


if __name__ == "__main__":
    chosen = sys.argv[sys.argv.index("--reply-as") + 1] if "--reply-as" in sys.argv else "artifact"
    A2A(agent=agent(chosen)).serve_stdio(memory="--memory" in sys.argv)
