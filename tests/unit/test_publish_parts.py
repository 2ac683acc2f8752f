"""The parts and artifacts a handler answers with (``TextPart``, ``FilePart``, ``DataPart``,
``Artifact``), the A2UI helpers, and how a task carries them to both dialects' wire."""

from __future__ import annotations

import dataclasses
import datetime
import subprocess
import sys
from typing import Any

import pytest

import cleveragents
from cleveragents import (
    A2UI_MIME_TYPE,
    Agent,
    Artifact,
    DataPart,
    FilePart,
    TextPart,
    create_a2ui_part,
    is_a2ui_part,
)
from cleveragents.a2a.codec_v03 import V03Codec
from cleveragents.a2a.codec_v1 import V1Codec
from cleveragents.app.tasks import TaskService
from cleveragents.domain import task as model
from cleveragents.domain.task import Message, Part, Role, TaskState
from cleveragents.ids import new_id
from cleveragents.infra.store.memory import MemoryStore

PNG = b"\x89PNG\r\n\x1a\n\x00\xff"


async def send(handler: Any, text: str = "go") -> model.Task:
    service = TaskService(MemoryStore(), Agent(name="parts", handler=handler))
    return await service.send(Message(new_id(), Role.USER, (Part.of_text(text),)))


# -- the types -------------------------------------------------------------------------

def test_each_part_is_the_task_models_part_with_its_kind():
    text = TextPart(text="hello", metadata={"lang": "en"})
    by_uri = FilePart(file_uri="https://example.com/chart.png")
    by_bytes = FilePart(file_bytes=bytearray(PNG), name="chart.png", mime_type="image/x-png")
    data = DataPart(data={"rows": 2})
    assert all(isinstance(p, Part) for p in (text, by_uri, by_bytes, data))
    assert [p.kind for p in (text, by_uri, by_bytes, data)] == ["text", "file", "file", "data"]
    assert (text.text, text.metadata) == ("hello", {"lang": "en"})
    assert (by_uri.url, by_uri.raw, by_uri.filename, by_uri.media_type) == (
        "https://example.com/chart.png", None, None, None)
    assert (by_bytes.raw, by_bytes.filename, by_bytes.media_type) == (PNG, "chart.png", "image/x-png")
    assert type(by_bytes.raw) is bytes and (data.data, data.has_data) == ({"rows": 2}, True)
    assert DataPart(None).has_data and DataPart(None).data is None  # JSON null is data too


def test_a_file_name_gives_the_media_type_unless_one_is_given():
    assert FilePart(file_uri="https://example.com/x", name="report.pdf").media_type == "application/pdf"
    assert FilePart(file_bytes=b"", name="notes.unknownext").media_type is None
    assert FilePart(file_bytes=b"{}", name="a.json", mime_type="text/plain").media_type == "text/plain"


def test_data_is_made_json_as_the_part_is_made():
    when = datetime.date(2026, 1, 2)
    part = DataPart({"when": when, "pair": (1, 2)}, metadata={"tags": ("a",)})
    assert part.data == {"when": "2026-01-02", "pair": [1, 2]} and part.metadata == {"tags": ["a"]}


@pytest.mark.parametrize(("make", "message"), [
    (lambda: TextPart(3), "TextPart text must be a string, not int"),
    (lambda: TextPart("a", metadata=["x"]), "TextPart metadata must be a mapping, not list"),
    (lambda: TextPart("a", metadata={1: "x"}), "TextPart metadata keys must be strings, not 1"),
    (lambda: FilePart(), "exactly one of file_uri"),
    (lambda: FilePart(file_uri="a", file_bytes=b"b"), "exactly one of file_uri"),
    (lambda: FilePart(file_bytes="text"), "FilePart file_bytes must be bytes, not str"),
    (lambda: FilePart(file_uri=""), "FilePart file_uri must be a non-empty string"),
    (lambda: FilePart(file_uri="x", name=3), "FilePart name must be a non-empty string"),
    (lambda: DataPart({"x": float("nan")}), "DataPart data must be JSON"),
    (lambda: DataPart(object()), "DataPart data must be JSON"),
    (lambda: DataPart({}, metadata={"x": object()}), "DataPart metadata must be JSON"),
    (lambda: Artifact([]), "an Artifact needs at least one part"),
    (lambda: Artifact(TextPart("a")), "must be a list of parts"),
    (lambda: Artifact("abc"), "must be a list of parts"),
    (lambda: Artifact([TextPart("a"), 4]), "not int"),
    (lambda: Artifact(["a"], name=""), "Artifact name must be a non-empty string"),
    (lambda: Artifact(["a"], artifact_id=7), "Artifact artifact_id must be a non-empty string"),
    (lambda: Artifact(["a"], extensions=[None]), "extension URIs"),
    (lambda: create_a2ui_part([{"createSurface": {}}]), "an A2UI message is an object"),
])
def test_bad_input_is_refused_where_it_is_made(make, message):
    with pytest.raises(TypeError, match=message.replace("(", r"\(")):
        make()


def test_an_artifact_takes_parts_or_strings_and_makes_its_id():
    artifact = Artifact(parts=["Summary", DataPart({"n": 1})], name="Report", description="Quarterly",
                        metadata={"q": 3})
    assert isinstance(artifact, model.Artifact) and artifact.artifact_id
    assert artifact.parts == (TextPart("Summary"), DataPart({"n": 1}))
    assert (artifact.name, artifact.description, artifact.metadata) == ("Report", "Quarterly", {"q": 3})
    assert Artifact(["a"]).artifact_id != Artifact(["a"]).artifact_id
    assert Artifact(["a"], artifact_id="fixed").artifact_id == "fixed"
    # The task model changes artifacts with dataclasses.replace (appending chunks): it still works.
    longer = dataclasses.replace(artifact, parts=(*artifact.parts, TextPart("more")))
    assert longer.artifact_id == artifact.artifact_id and len(longer.parts) == 3


def test_reprs_say_what_an_author_wrote():
    assert repr(TextPart("hi")) == "TextPart('hi')"
    made = FilePart(file_bytes=b"abc", name="a.txt")
    assert repr(made) == "FilePart(file_bytes=<3 bytes>, name='a.txt', mime_type='text/plain')"
    assert repr(DataPart([1], metadata={"k": 1})) == "DataPart([1], metadata={'k': 1})"


# -- A2UI ------------------------------------------------------------------------------

def test_an_a2ui_part_is_a_data_part_with_the_a2ui_media_type():
    message = {"createSurface": {"surfaceId": "main", "catalogId": "standard"}}
    part = create_a2ui_part(message, metadata={"surface": "main"})
    assert isinstance(part, DataPart) and part.data == message
    assert part.metadata == {"surface": "main", "mimeType": A2UI_MIME_TYPE} and A2UI_MIME_TYPE == "application/json+a2ui"
    assert create_a2ui_part(message, metadata={"mimeType": "text/plain"}).metadata == {"mimeType": A2UI_MIME_TYPE}
    assert is_a2ui_part(part) and not is_a2ui_part(DataPart(message)) and not is_a2ui_part(TextPart("x"))
    # A text part with the media type is not A2UI: the payload is data.
    assert not is_a2ui_part(TextPart("x", metadata={"mimeType": A2UI_MIME_TYPE}))


@pytest.mark.parametrize(("wire", "expected"), [
    ({"data": {"a": 1}, "metadata": {"mimeType": "application/json+a2ui"}}, True),  # 1.0
    ({"kind": "data", "data": {"a": 1}, "metadata": {"mimeType": "application/json+a2ui"}}, True),  # 0.3
    ({"data": {"a": 1}, "metadata": {"mimeType": "application/a2ui+json"}}, True),  # A2UI's newer spelling
    ({"kind": "text", "text": "x", "metadata": {"mimeType": "application/json+a2ui"}}, False),
    ({"data": {"a": 1}, "metadata": {"mimeType": ["application/json+a2ui"]}}, False),
    ({"data": {"a": 1}, "metadata": "application/json+a2ui"}, False),
    ({"data": {"a": 1}}, False),
    ("not a part", False),
])
def test_is_a2ui_part_reads_parts_as_json_in_either_dialect(wire, expected):
    assert is_a2ui_part(wire) is expected


def test_the_a2ui_helpers_are_also_where_ui_code_looks_for_them():
    from cleveragents.ui import a2ui

    assert a2ui.create_a2ui_part is create_a2ui_part and a2ui.is_a2ui_part is is_a2ui_part


# -- handlers answer with them ---------------------------------------------------------

async def test_a_returned_artifact_is_the_tasks_artifact_as_given():
    artifact = Artifact([TextPart("t"), FilePart(file_bytes=PNG, name="c.png")], name="Chart", artifact_id="c1")
    task = await send(lambda text: artifact)
    assert task.state is TaskState.COMPLETED and task.artifacts == (artifact,)


async def test_a_part_or_a_list_of_parts_becomes_one_artifact():
    task = await send(lambda text: DataPart({"n": 1}))
    (artifact,) = task.artifacts
    assert artifact.name == "response" and artifact.parts == (DataPart({"n": 1}),)
    parts = [FilePart(file_uri="https://example.com/a.png"), create_a2ui_part({"deleteSurface": {"surfaceId": "s"}})]
    task = await send(lambda text: parts)
    (artifact,) = task.artifacts
    assert list(artifact.parts) == parts


async def test_a_generator_yields_each_part_as_an_artifact_of_its_own():
    async def handler(text: str):
        yield "Here:"
        yield FilePart(file_uri="https://example.com/a.png")
        yield DataPart({"n": 1})

    task = await send(handler)
    kinds = sorted(tuple(p.kind for p in a.parts) for a in task.artifacts)
    assert kinds == [("data",), ("file",), ("text",)] and task.state is TaskState.COMPLETED


async def test_a_list_that_is_not_all_parts_fails_the_task_naming_what_it_held():
    task = await send(lambda text: [TextPart("a"), 3])
    assert task.state is TaskState.FAILED
    assert "not a list of TextPart, int" in task.status.message.text()


@pytest.mark.parametrize("codec", [V1Codec(), V03Codec()], ids=["1.0", "0.3"])
def test_both_codecs_carry_every_part_and_read_it_back(codec):
    artifact = Artifact([TextPart("t", metadata={"a": 1}), FilePart(file_bytes=PNG, name="c.png"),
                         FilePart(file_uri="https://example.com/r.pdf", name="r.pdf"), DataPart({"n": [1, 2]}),
                         create_a2ui_part({"createSurface": {"surfaceId": "s"}}), DataPart([1, 2]), DataPart(None)],
                        name="All", metadata={"k": "v"})
    back = codec.decode_artifact(codec.encode_artifact(artifact))
    assert back.artifact_id == artifact.artifact_id and back.name == "All" and back.metadata == {"k": "v"}
    assert [part.to_dict() for part in back.parts] == [part.to_dict() for part in artifact.parts]
    assert [is_a2ui_part(p) for p in codec.encode_artifact(artifact)["parts"]] == [False] * 4 + [True] + [False] * 2


def test_a_stored_task_keeps_every_part():
    artifact = Artifact([FilePart(file_bytes=PNG, name="c.png"), DataPart(None)], name="All")
    stored = model.Artifact.from_dict(artifact.to_dict())
    assert [p.to_dict() for p in stored.parts] == [p.to_dict() for p in artifact.parts]


def test_the_types_are_exported_and_importing_the_package_stays_cheap():
    for name in ("TextPart", "FilePart", "DataPart", "Artifact", "create_a2ui_part", "is_a2ui_part"):
        assert name in cleveragents.__all__ and name in dir(cleveragents)
    code = "import sys, cleveragents; print('cleveragents.publish' in sys.modules, 'pydantic_core' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
