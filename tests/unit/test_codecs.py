"""The A2A 1.0 and 0.3 codecs: lossless round trips in both dialects, the exact wire
shapes of the specification, lenient inputs, precise errors, and (when the a2a-sdk is
installed) that what we send parses as the SDK's own types."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cleveragents.a2a.codec_v03 import DATA_COMPAT_KEY
from cleveragents.a2a.codec_v1 import FINAL_KEY
from cleveragents.a2a.codecs import get_codec
from cleveragents.a2a.errors import A2AVersionMismatchError
from cleveragents.domain.errors import ValidationError
from cleveragents.domain.task import (
    Artifact,
    Message,
    Part,
    PushConfig,
    Role,
    Task,
    TaskArtifactUpdate,
    TaskState,
    TaskStatus,
    TaskStatusUpdate,
)
from cleveragents.ids import format_utc, is_ulid

V1 = get_codec("1.0")
V03 = get_codec("0.3")
CODECS = [pytest.param(V1, id="1.0"), pytest.param(V03, id="0.3")]
SETTINGS = settings(max_examples=200, deadline=None)

# -- strategies: every internal type ---------------------------------------------------
ids = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=10)
# A few characters that need escaping or more than one UTF-8 byte, at a fraction of
# the cost of full Unicode.
TEXT = "ab z\"\\/\n\u00e9\u2713\U0001f600"
words = st.text(TEXT, min_size=1, max_size=8)
urls = ids.map(lambda s: f"https://example.com/{s}")
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(TEXT, max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(TEXT, max_size=4), inner, max_size=3),
    max_leaves=4,
)
metadata = st.none() | st.dictionaries(
    st.text(TEXT, max_size=4), json_values, min_size=1, max_size=2)  # TEXT can't spell a reserved key
timestamps = st.integers(946_684_800_000, 4_102_444_800_000).map(
    lambda ms: format_utc(datetime.fromtimestamp(ms / 1000, UTC)))


def maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.none() | strategy


PART_EXTRAS = {"metadata": metadata, "media_type": maybe(words), "filename": maybe(words)}
parts = st.one_of(
    st.builds(Part, text=st.text(TEXT, max_size=12), **PART_EXTRAS),
    st.builds(Part, raw=st.binary(max_size=12), **PART_EXTRAS),
    st.builds(Part, url=urls, **PART_EXTRAS),
    st.builds(Part, data=json_values, has_data=st.just(True), **PART_EXTRAS),
)


def model_strategies() -> st.SearchStrategy[tuple[str, Any]]:
    """(kind, value) pairs: ``kind`` names the encode_/decode_ methods for ``value``."""
    part_tuples = st.lists(parts, min_size=1, max_size=2).map(tuple)
    messages = st.builds(
        Message, message_id=ids, role=st.sampled_from(Role), parts=part_tuples, context_id=maybe(ids),
        task_id=maybe(ids), metadata=metadata, extensions=st.lists(urls, max_size=2).map(tuple),
        reference_task_ids=st.lists(ids, max_size=2).map(tuple))
    artifacts = st.builds(
        Artifact, artifact_id=ids, parts=part_tuples, name=maybe(words), description=maybe(words),
        metadata=metadata, extensions=st.lists(urls, max_size=2).map(tuple))
    statuses = st.builds(TaskStatus, state=st.sampled_from(TaskState), timestamp=maybe(timestamps),
                         message=maybe(messages))
    tasks = st.builds(Task, id=ids, context_id=ids, status=statuses,
                      history=st.lists(messages, max_size=2).map(tuple),
                      artifacts=st.lists(artifacts, max_size=1).map(tuple), metadata=metadata)
    status_updates = st.builds(TaskStatusUpdate, task_id=ids, context_id=ids, status=statuses,
                               final=st.booleans(), metadata=metadata)
    artifact_updates = st.builds(TaskArtifactUpdate, task_id=ids, context_id=ids, artifact=artifacts,
                                 append=st.booleans(), last_chunk=st.booleans(), metadata=metadata)
    authentication = st.builds(lambda scheme, credentials: {"scheme": scheme} | (
        {"credentials": credentials} if credentials else {}), st.sampled_from(["Bearer", "Basic"]), maybe(words))
    push_configs = st.builds(PushConfig, id=ids, task_id=ids, url=urls, token=maybe(words),
                             authentication=maybe(authentication))
    by_kind = {
        "part": parts, "message": messages, "artifact": artifacts, "task_status": statuses, "task": tasks,
        "status_update": status_updates, "artifact_update": artifact_updates,
        "stream_item": st.one_of(tasks, messages, status_updates, artifact_updates),
        "send_result": tasks | messages, "push_config": push_configs,
    }
    return st.one_of(*(st.tuples(st.just(kind), s) for kind, s in by_kind.items()))


ANY_VALUE = model_strategies()


def encode(codec: Any, kind: str, value: Any) -> Any:
    wire = getattr(codec, f"encode_{kind}")(value)
    return json.loads(json.dumps(wire, allow_nan=False))  # plain JSON, as it goes on the wire


def decode(codec: Any, kind: str, wire: Any) -> Any:
    return getattr(codec, f"decode_{kind}")(wire)


# -- round trips ----------------------------------------------------------------------
@SETTINGS
@given(pair=ANY_VALUE)
def test_every_value_survives_a_round_trip_in_each_dialect_and_through_both(pair):
    kind, value = pair
    through_v1 = decode(V1, kind, encode(V1, kind, value))
    assert through_v1 == value
    assert decode(V03, kind, encode(V03, kind, value)) == value
    assert decode(V03, kind, encode(V03, kind, through_v1)) == value


@pytest.mark.parametrize("codec", CODECS)
def test_no_nulls_are_sent_and_empty_strings_are_kept(codec):
    task = Task("t", "c", TaskStatus(TaskState.SUBMITTED), (Message("m", Role.USER, (Part.of_text("hi"),)),))
    assert "null" not in json.dumps(codec.encode_task(task))
    part = Part(raw=b"", media_type="", filename="", metadata={"": ""})
    assert codec.decode_part(codec.encode_part(part)) == part


# -- exact wire shapes, with the specification's field names --------------------------
STAMP = "2025-01-02T03:04:05.678Z"
HELLO = Message("m1", Role.USER, (Part.of_text("hello"),), context_id="c1", task_id="t1")
REPLY = Artifact("a1", (Part.of_data({"answer": 42}), Part(url="https://x/y.png", media_type="image/png",
                                                              filename="y.png")), name="result")
TASK = Task("t1", "c1", TaskStatus(TaskState.COMPLETED, STAMP), (HELLO,), (REPLY,))


def test_v1_task_shape():
    assert V1.encode_task(TASK) == {
        "id": "t1", "contextId": "c1",
        "status": {"state": "TASK_STATE_COMPLETED", "timestamp": STAMP},
        "history": [{"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hello"}],
                     "contextId": "c1", "taskId": "t1"}],
        "artifacts": [{"artifactId": "a1", "name": "result", "parts": [
            {"data": {"answer": 42}},
            {"url": "https://x/y.png", "mediaType": "image/png", "filename": "y.png"}]}],
    }


def test_v03_task_shape():
    assert V03.encode_task(TASK) == {
        "kind": "task", "id": "t1", "contextId": "c1",
        "status": {"state": "completed", "timestamp": STAMP},
        "history": [{"kind": "message", "messageId": "m1", "role": "user",
                     "parts": [{"kind": "text", "text": "hello"}], "contextId": "c1", "taskId": "t1"}],
        "artifacts": [{"artifactId": "a1", "name": "result", "parts": [
            {"kind": "data", "data": {"answer": 42}},
            {"kind": "file", "file": {"uri": "https://x/y.png", "mimeType": "image/png", "name": "y.png"}}]}],
    }


def test_results_and_stream_items_are_wrapped_in_v1_and_tagged_in_v03():
    update = TaskStatusUpdate("t1", "c1", TaskStatus(TaskState.WORKING, STAMP))
    chunk = TaskArtifactUpdate("t1", "c1", Artifact("a1", (Part.of_text("x"),)), append=True, last_chunk=True)
    assert V1.encode_send_result(HELLO) == {"message": V1.encode_message(HELLO)}
    assert V1.encode_send_result(TASK) == {"task": V1.encode_task(TASK)}
    assert V1.encode_stream_item(update) == {"statusUpdate": {
        "taskId": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_WORKING", "timestamp": STAMP}}}
    assert V1.encode_stream_item(chunk) == {"artifactUpdate": {
        "taskId": "t1", "contextId": "c1", "artifact": {"artifactId": "a1", "parts": [{"text": "x"}]},
        "append": True, "lastChunk": True}}
    assert V03.encode_send_result(TASK)["kind"] == "task"
    assert V03.encode_stream_item(update) == {
        "kind": "status-update", "taskId": "t1", "contextId": "c1",
        "status": {"state": "working", "timestamp": STAMP}, "final": False}
    assert V03.encode_stream_item(chunk)["kind"] == "artifact-update"


def test_part_shapes():
    part = Part(raw=b"\x00\xffhi", media_type="application/octet-stream")
    assert V1.encode_part(part) == {"raw": "AP9oaQ==", "mediaType": "application/octet-stream"}
    assert V03.encode_part(part) == {"kind": "file",
                                     "file": {"bytes": "AP9oaQ==", "mimeType": "application/octet-stream"}}
    # What 0.3 has no slot for travels in documented keys.
    assert V03.encode_part(Part.of_text("# hi", media_type="text/markdown", filename="a.md")) == {
        "kind": "text", "text": "# hi", "mediaType": "text/markdown", "filename": "a.md"}
    assert V03.encode_part(Part.of_data([1, 2], metadata={"k": "v"})) == {
        "kind": "data", "data": {"value": [1, 2]}, "metadata": {"k": "v", DATA_COMPAT_KEY: True}}


def test_v1_carries_a_final_flag_only_when_the_state_does_not_imply_it():
    ends = TaskStatusUpdate("t", "c", TaskStatus(TaskState.INPUT_REQUIRED), final=True)
    odd = TaskStatusUpdate("t", "c", TaskStatus(TaskState.COMPLETED), final=False)
    assert "metadata" not in V1.encode_status_update(ends)
    assert V1.encode_status_update(odd)["metadata"] == {FINAL_KEY: False}


def test_push_config_shapes():
    config = PushConfig("p1", "t1", "https://hooks.example/a", "tok", {"scheme": "Bearer", "credentials": "s"})
    assert V1.encode_push_config(config) == {
        "id": "p1", "taskId": "t1", "url": "https://hooks.example/a", "token": "tok",
        "authentication": {"scheme": "Bearer", "credentials": "s"}}
    assert V03.encode_push_config(config) == {"taskId": "t1", "pushNotificationConfig": {
        "id": "p1", "url": "https://hooks.example/a", "token": "tok",
        "authentication": {"schemes": ["Bearer"], "credentials": "s"}}}


@pytest.mark.parametrize("codec", CODECS)
def test_list_result_shape(codec):
    assert codec.encode_list_result([TASK], None, 50, 1) == {
        "tasks": [codec.encode_task(TASK)], "nextPageToken": "", "pageSize": 50, "totalSize": 1}


@pytest.mark.parametrize(("state", "v1", "v03"), [
    (TaskState.SUBMITTED, "TASK_STATE_SUBMITTED", "submitted"),
    (TaskState.INPUT_REQUIRED, "TASK_STATE_INPUT_REQUIRED", "input-required"),
    (TaskState.AUTH_REQUIRED, "TASK_STATE_AUTH_REQUIRED", "auth-required"),
    (TaskState.CANCELED, "TASK_STATE_CANCELED", "canceled"),
])
def test_state_spellings(state, v1, v03):
    assert (V1.state_to_wire(state), V03.state_to_wire(state)) == (v1, v03)
    for codec in (V1, V03):
        assert codec.state_from_wire(v1) is state and codec.state_from_wire(v03) is state


def test_get_codec_ignores_the_patch_and_refuses_unknown_versions():
    assert get_codec("0.3.0") is V03 and get_codec("1.0.1") is V1
    with pytest.raises(A2AVersionMismatchError):
        get_codec("2.0")


# -- lenient input ------------------------------------------------------------------------
@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("spelling", ["cancelled", "TASK_STATE_CANCELLED", "CANCELED"])
def test_cancelled_is_accepted(codec, spelling):
    assert codec.state_from_wire(spelling) is TaskState.CANCELED


def test_untagged_part_shapes_are_accepted_in_1_0():
    request = V1.decode_send_params({"message": {"messageId": "m", "role": "user", "parts": [
        {"text": "Analyze this image"},
        {"fileWithUri": "https://example.com/chart.png", "mediaType": "image/png"},
        {"data": {"metadata": "analysis_request"}},
    ]}})
    assert request.message.role is Role.USER and request.message.message_id == "m"
    assert request.message.parts == (
        Part.of_text("Analyze this image"),
        Part(url="https://example.com/chart.png", media_type="image/png"),
        Part.of_data({"metadata": "analysis_request"}),
    )
    assert request.blocking and request.push_config is None


def test_each_dialect_accepts_the_other_ones_roles_and_parts():
    message = {"messageId": "m", "role": "ROLE_USER", "parts": [{"kind": "text", "text": "a"}]}
    assert V03.decode_message(message).role is Role.USER
    assert V1.decode_message({**message, "role": "agent"}).role is Role.AGENT
    assert V1.decode_message(message).parts == (Part.of_text("a"),)


def test_explicit_nulls_count_as_absent():
    part = {"text": "a", "raw": None, "url": None, "mediaType": None, "metadata": None}
    assert V1.decode_part(part) == Part.of_text("a")


@pytest.mark.parametrize(("given_stamp", "stored"), [
    ("2023-10-27T10:00:00Z", "2023-10-27T10:00:00.000Z"),
    ("2023-10-27T12:00:00.123456789+02:00", "2023-10-27T10:00:00.123Z"),
    ("2023-10-27T10:00:00", "2023-10-27T10:00:00.000Z"),
])
def test_timestamps_are_normalised_to_utc_milliseconds(given_stamp, stored):
    assert V1.decode_task_status({"state": "TASK_STATE_WORKING", "timestamp": given_stamp}).timestamp == stored


def test_base64_may_be_url_safe_or_unpadded():
    assert V1.decode_part({"raw": "AP9oaQ"}).raw == b"\x00\xffhi"
    assert V1.decode_part({"raw": "_-8"}).raw == b"\xff\xef"


@pytest.mark.parametrize(("configuration", "blocking"), [
    ({}, True), ({"returnImmediately": True}, False), ({"returnImmediately": False}, True),
    ({"blocking": False}, False), ({"blocking": True, "returnImmediately": False}, True),
])
@pytest.mark.parametrize("codec", CODECS)
def test_blocking_comes_from_either_spelling(codec, configuration, blocking):
    params = {"message": {"messageId": "m", "role": "user", "parts": []}, "configuration": configuration}
    assert codec.decode_send_params(params).blocking is blocking


def test_send_configuration_is_decoded():
    request = V1.decode_send_params({
        "message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]},
        "configuration": {"acceptedOutputModes": ["text/plain"], "historyLength": 3,
                          "taskPushNotificationConfig": {"url": "https://hooks.example/a", "token": "t"}},
        "metadata": {"trace": "x"},
    })
    assert (request.history_length, request.accepted_output_modes, request.metadata) == (3, ("text/plain",),
                                                                                          {"trace": "x"})
    assert request.push_config is not None and request.push_config.task_id == ""
    assert request.push_config.url == "https://hooks.example/a" and is_ulid(request.push_config.id)
    nested = V03.decode_send_params({"message": {"messageId": "m", "role": "user", "parts": []}, "configuration": {
        "pushNotificationConfig": {"url": "https://h.example/b", "authentication": {"schemes": ["Bearer", "Basic"]}}}})
    assert nested.push_config is not None and nested.push_config.authentication == {"scheme": "Bearer"}


def test_v03_infers_a_missing_kind():
    item = V03.encode_status_update(TaskStatusUpdate("t", "c", TaskStatus(TaskState.WORKING)))
    del item["kind"]
    assert isinstance(V03.decode_stream_item(item), TaskStatusUpdate)


# -- errors name the offending field -------------------------------------------------------
def error_of(call: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
    with pytest.raises(ValidationError) as caught:
        call(*args, **kwargs)
    assert caught.value.message == "Invalid params"
    [error] = caught.value.data["errors"]
    return error


def send(parts: list[Any], **message: Any) -> dict[str, Any]:
    return {"message": {"messageId": "m", "role": "user", "parts": parts, **message}}


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize(("params", "loc", "kind"), [
    ([], [], "dict_type"),
    ({}, ["message"], "missing"),
    (send([{"text": "a"}, {"text": "b"}, {"bogus": 1}]), ["message", "parts", 2], "value_error"),
    (send([{"text": "a", "url": "https://x"}]), ["message", "parts", 0], "value_error"),
    (send([{"text": 5}]), ["message", "parts", 0, "text"], "string_type"),
    (send([{"raw": "***"}]), ["message", "parts", 0, "raw"], "base64_decode"),
    (send([{"kind": "file", "file": {"bytes": "@@"}}]), ["message", "parts", 0, "file", "bytes"], "base64_decode"),
    (send([{"kind": "file", "file": {}}]), ["message", "parts", 0, "file"], "value_error"),
    (send([{"kind": "text", "data": {}}]), ["message", "parts", 0, "text"], "missing"),
    (send([{"kind": "image", "text": "a"}]), ["message", "parts", 0, "kind"], "enum"),
    (send([], role="boss"), ["message", "role"], "enum"),
    ({"message": {"messageId": "m", "parts": []}}, ["message", "role"], "missing"),
    (send([], metadata=[1]), ["message", "metadata"], "dict_type"),
    (send([], referenceTaskIds=["a", 2]), ["message", "referenceTaskIds", 1], "string_type"),
    ({**send([]), "configuration": []}, ["configuration"], "dict_type"),
    ({**send([]), "configuration": {"historyLength": -1}}, ["configuration", "historyLength"], "greater_than_equal"),
    ({**send([]), "configuration": {"blocking": "yes"}}, ["configuration", "blocking"], "bool_type"),
    ({**send([]), "configuration": {"blocking": False, "returnImmediately": False}}, ["configuration"],
     "value_error"),
    ({**send([]), "configuration": {"pushNotificationConfig": {"url": "file:///etc"}}},
     ["configuration", "pushNotificationConfig", "url"], "url_parsing"),
    ({**send([]), "configuration": {"pushNotificationConfig": {"url": "https://[::1"}}},
     ["configuration", "pushNotificationConfig", "url"], "url_parsing"),
])
def test_bad_send_params_name_the_field(codec, params, loc, kind):
    error = error_of(codec.decode_send_params, params)
    parts = params.get("message", {}).get("parts", []) if isinstance(params, dict) else []
    untagged = next((i for i, p in enumerate(parts) if "kind" not in p), None)
    if codec.tagged and untagged is not None:  # 0.3 first asks an untagged part for its kind
        loc, kind = ["message", "parts", untagged, "kind"], "missing"
    assert (error["loc"], error["type"]) == (loc, kind)


@pytest.mark.parametrize(("codec", "params", "loc"), [
    (V1, {"url": "https://h.example/a"}, ["taskId"]),
    (V1, {"taskId": "t"}, ["url"]),
    (V1, {"taskId": "t", "url": "http://[oops]/"}, ["url"]),
    (V03, {"taskId": "t", "pushNotificationConfig": {"url": "https://[::1"}}, ["pushNotificationConfig", "url"]),
    (V1, {"taskId": "t", "url": "https://h.example/a", "authentication": {"credentials": "x"}},
     ["authentication", "scheme"]),
    (V03, {"taskId": "t", "pushNotificationConfig": {"token": "x"}}, ["pushNotificationConfig", "url"]),
    (V03, {"taskId": "t", "pushNotificationConfig": {"url": "https://h.example/a",
                                                     "authentication": {"schemes": []}}},
     ["pushNotificationConfig", "authentication", "scheme"]),
])
def test_bad_push_configs_name_the_field(codec, params, loc):
    assert error_of(codec.decode_push_config, params)["loc"] == loc


@pytest.mark.parametrize(("codec", "params", "ref"), [
    (V1, {"taskId": "t", "id": "c"}, ("t", "c")),
    (V1, {"taskId": "t"}, ("t", None)),
    (V03, {"id": "t", "pushNotificationConfigId": "c"}, ("t", "c")),
    (V03, {"id": "t"}, ("t", None)),
])
def test_each_dialect_names_a_push_config_its_own_way(codec, params, ref):
    assert codec.decode_push_config_ref(params) == ref


@pytest.mark.parametrize(("codec", "params", "loc"), [
    (V1, {"id": "c"}, ["taskId"]),
    (V1, {"taskId": "t", "id": 5}, ["id"]),
    (V03, {"taskId": "t", "pushNotificationConfigId": "c"}, ["id"]),
    (V03, {"id": ""}, ["id"]),
    (V1, [], []),
])
def test_bad_push_config_refs_name_the_field(codec, params, loc):
    assert error_of(codec.decode_push_config_ref, params)["loc"] == loc


@pytest.mark.parametrize(("codec", "params", "loc"), [
    (V1, {"taskId": "t"}, ["id"]),
    (V03, {"id": "t"}, ["pushNotificationConfigId"]),
    (V03, {"id": "t", "pushNotificationConfigId": 5}, ["pushNotificationConfigId"]),
])
def test_a_config_id_is_named_in_its_dialect_when_missing_or_not_text(codec, params, loc):
    assert error_of(codec.decode_push_config_ref, params, config_required=True)["loc"] == loc


def test_a_push_config_inside_a_send_needs_no_task_id():
    config = V1.decode_push_config({"url": "https://h.example/a"}, task_id_required=False)
    assert config.task_id == "" and is_ulid(config.id)


@pytest.mark.parametrize(("codec", "wire", "loc"), [
    (V1, {"id": "t", "status": {"state": "TASK_STATE_NOPE"}}, ["status", "state"]),
    (V1, {"id": "t", "status": {"state": "TASK_STATE_WORKING", "timestamp": "yesterday"}}, ["status", "timestamp"]),
    (V1, {"id": "t", "status": {"state": "TASK_STATE_WORKING", "timestamp": "9999-12-31T23:59:59-01:00"}},
     ["status", "timestamp"]),
    (V03, {"kind": "message", "id": "t", "status": {"state": "working"}}, ["kind"]),
    (V03, {"id": "t", "status": {"state": "working"}, "history": [{"messageId": "m", "role": "user", "parts": [{}]}]},
     ["history", 0, "parts", 0]),
])
def test_bad_tasks_name_the_field(codec, wire, loc):
    assert error_of(codec.decode_task, wire)["loc"] == loc


def test_bad_stream_items_are_refused():
    assert error_of(V1.decode_stream_item, {"task": {}, "message": {}})["loc"] == []
    assert error_of(V03.decode_send_result, {"kind": "status-update"})["loc"] == ["kind"]
    assert error_of(V1.state_from_wire, "paused", ["status"])["loc"] == ["status"]


# -- interop: what we send parses as the a2a-sdk's types -------------------------------------
SDK_SETTINGS = settings(max_examples=60, deadline=None)  # the SDK models are slow to validate


def test_v1_output_parses_as_the_sdk_protobuf_types():
    pb2 = pytest.importorskip("a2a.types.a2a_pb2")
    json_format = pytest.importorskip("google.protobuf.json_format")
    types = {"part": pb2.Part, "message": pb2.Message, "artifact": pb2.Artifact, "task_status": pb2.TaskStatus,
             "task": pb2.Task, "status_update": pb2.TaskStatusUpdateEvent,
             "artifact_update": pb2.TaskArtifactUpdateEvent, "stream_item": pb2.StreamResponse,
             "send_result": pb2.SendMessageResponse, "push_config": pb2.TaskPushNotificationConfig}

    @SDK_SETTINGS
    @given(pair=ANY_VALUE)
    def check(pair):
        kind, value = pair
        parsed = json_format.ParseDict(encode(V1, kind, value), types[kind]())  # refuses unknown fields
        # The SDK's own JSON differs in form (timestamps, numbers) but means the same.
        assert decode(V1, kind, json_format.MessageToDict(parsed)) == value

    check()


def without_our_part_keys(wire: Any) -> Any:
    """The 0.3 wire minus the part keys only we read (``mediaType``, ``filename``)."""
    if isinstance(wire, list):
        return [without_our_part_keys(item) for item in wire]
    if not isinstance(wire, dict):
        return wire
    ours = ("mediaType", "filename") if wire.get("kind") in ("text", "data") else ()
    return {key: value if key in ("data", "metadata") else without_our_part_keys(value)
            for key, value in wire.items() if key not in ours}


def test_v03_output_validates_as_the_sdk_models():
    v03 = pytest.importorskip("a2a.compat.v0_3.types")
    types = {"part": v03.Part, "message": v03.Message, "artifact": v03.Artifact, "task_status": v03.TaskStatus,
             "task": v03.Task, "status_update": v03.TaskStatusUpdateEvent,
             "artifact_update": v03.TaskArtifactUpdateEvent, "push_config": v03.TaskPushNotificationConfig}
    by_class = {Task: "task", Message: "message", TaskStatusUpdate: "status_update",
                TaskArtifactUpdate: "artifact_update"}

    @SDK_SETTINGS
    @given(pair=ANY_VALUE)
    def check(pair):
        kind, value = pair
        wire = encode(V03, kind, value)
        model = types[by_class[type(value)] if kind in ("stream_item", "send_result") else kind]
        # The SDK reads every field and writes back exactly what we sent.
        dumped = model.model_validate(wire).model_dump(mode="json", by_alias=True, exclude_none=True)
        assert dumped == without_our_part_keys(wire)

    check()
