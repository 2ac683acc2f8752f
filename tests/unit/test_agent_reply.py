"""What ``Agent.start`` answers: the reply's text as a ``str`` (``AgentReply``), with the
artifacts, a ``Message`` reply's parts and the question the agent asked."""

from __future__ import annotations

import pickle

import pytest

from cleveragents import (
    Agent,
    AgentReply,
    AgentTeam,
    Artifact,
    DataPart,
    FilePart,
    InputRequired,
    Message,
    TextPart,
    create_a2ui_part,
    is_a2ui_part,
)
from cleveragents.domain.actor import ArtifactChunk


def test_a_text_reply_is_the_text():
    reply = Agent(name="Shouter", handler=lambda text: text.upper() + "!").start("hi")
    assert isinstance(reply, AgentReply) and reply == "HI!" and reply.text == "HI!" and type(reply.text) is str
    assert repr(reply) == "'HI!'" and f"{reply}" == "HI!" and reply.splitlines() == ["HI!"]
    assert reply.parts == () and reply.artifacts == () and reply.message is None and reply.input_required is None


def test_parts_alone_come_back_as_parts():
    blob = FilePart(file_bytes=b"quarter,revenue\n", name="q3.csv")
    form = create_a2ui_part({"deleteSurface": {"surfaceId": "feedback"}})
    reply = Agent(name="Reporter", handler=lambda text: [blob, form]).start("export")
    assert reply == "" and reply.parts == (blob, form) and is_a2ui_part(reply.parts[1])
    (artifact,) = reply.artifacts
    assert artifact.name == "response" and artifact.parts == (blob, form)
    assert reply.parts[0].raw == b"quarter,revenue\n" and reply.parts[0].media_type == "text/csv"


def test_a_dict_is_a_data_artifact_and_text_with_it_is_the_text():
    def answer(text: str):
        yield {"words": 2}
        yield "two words"

    reply = Agent(name="Counter", handler=answer).start("a b")
    assert reply == "two words" and [a.name for a in reply.artifacts] == ["data"]
    assert [part.data for part in reply.parts] == [{"words": 2}]


def test_an_artifact_of_several_parts_keeps_its_name():
    made = Artifact(parts=["Revenue is up.", DataPart({"q": 3})], name="Q3 report")
    reply = Agent(name="Reporter", handler=lambda text: made).start("report")
    assert reply.artifacts == (made,) and reply.parts == (TextPart("Revenue is up."), DataPart({"q": 3}))


async def test_appended_chunks_make_one_artifact():
    async def stream(text: str):
        first = Artifact(parts=["one "], artifact_id="log")
        yield ArtifactChunk(first, last_chunk=False)
        yield ArtifactChunk(Artifact(parts=["two"], artifact_id="log"), append=True)

    reply = await Agent(name="Logger", handler=stream).astart("go")
    (artifact,) = reply.artifacts
    assert artifact.artifact_id == "log" and [part.text for part in artifact.parts] == ["one ", "two"]


def test_a_message_reply_gives_its_data():
    reply = Agent(name="Greeter", handler=lambda text: Message("hi there", data={"kind": "greeting"})).start("hello")
    assert reply == "hi there" and reply.message is not None
    assert [part.data for part in reply.parts] == [{"kind": "greeting"}] and reply.artifacts == ()


def test_a_question_is_the_text_and_says_so():
    reply = Agent(name="Asker", handler=lambda text: InputRequired("Which file?", auth=True)).start("review")
    assert reply == "Which file?" and reply.input_required == InputRequired("Which file?", auth=True)
    assert repr(reply) == "AgentReply('Which file?', input_required=InputRequired(prompt='Which file?', auth=True))"


def test_a_team_gives_its_steps_outputs_as_artifacts():
    one = Agent(name="One", handler=lambda text: "notes")
    two = Agent(name="Two", handler=lambda text: "report")
    answered = Agent(name="Lead", actor=AgentTeam([one, two])).start("go")
    assert answered == "report" and [a.name for a in answered.artifacts] == ["One"]


@pytest.mark.parametrize("handler", [lambda text: "plain", lambda text: [DataPart({"a": 1})]])
def test_a_reply_pickles(handler):
    reply = Agent(name="Any", handler=handler).start("x")
    again = pickle.loads(pickle.dumps(reply))
    assert again == reply and again.parts == reply.parts and type(again) is AgentReply
