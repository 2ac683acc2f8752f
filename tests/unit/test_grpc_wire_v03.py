"""The A2A 0.3 gRPC binding's conversions (``cleveragents/a2a/grpc_wire_v03.py``),
checked against the a2a-sdk's own 0.3 messages and converters (``a2a.compat.v0_3`` of
the 1.x SDK the test extra installs: a copy of the 0.3 SDK's ``proto_utils``): what our
messages serialize is what the SDK reads into the same 0.3 objects, and what the SDK
sends becomes our 0.3 JSON-RPC params."""

from __future__ import annotations

import pytest

pytest.importorskip("grpc", reason="the grpc extra")
pytest.importorskip("a2a.compat.v0_3.a2a_v0_3_pb2", reason="the a2a-sdk's 0.3 messages")

from a2a.compat.v0_3 import a2a_v0_3_pb2 as sdk_pb  # noqa: E402
from a2a.compat.v0_3 import proto_utils, types  # noqa: E402
from google.protobuf import descriptor_pb2  # noqa: E402

from cleveragents.a2a import cards, grpc_wire, grpc_wire_v03, proto_v03  # noqa: E402
from cleveragents.a2a.grpc_proto.a2a_v0_3_descriptor import A2A_V0_3_PROTO  # noqa: E402
from cleveragents.domain.errors import ValidationError  # noqa: E402

TASK = {
    "kind": "task", "id": "t1", "contextId": "c1",
    "status": {"state": "input-required", "timestamp": "2026-01-02T03:04:05Z",
               "message": {"kind": "message", "messageId": "m2", "role": "agent",
                           "parts": [{"kind": "text", "text": "which one?"}]}},
    "history": [{"kind": "message", "messageId": "m1", "role": "user", "taskId": "t1", "contextId": "c1",
                 "parts": [{"kind": "text", "text": "hi", "metadata": {"lang": "en"}},
                           {"kind": "file", "file": {"uri": "https://x.example/a.png", "mimeType": "image/png",
                                                     "name": "a.png"}},
                           {"kind": "data", "data": {"n": 1.0, "list": ["a"]}}],
                 "extensions": ["urn:x"]}],
    "artifacts": [{"artifactId": "a1", "name": "out", "description": "the answer",
                   "parts": [{"kind": "text", "text": "42"}], "metadata": {"k": "v"}}],
    "metadata": {"origin": "test"},
}


def v03(value: object) -> object:
    """A 0.3 object's JSON, less its empty fields: the SDK reads a proto3 field left
    unset as its zero (``name: ""``, ``metadata: {}``), where the JSON-RPC model has none."""
    return _pruned(value.model_dump(mode="json", by_alias=True, exclude_none=True))  # type: ignore[attr-defined]


def _pruned(value: object) -> object:
    if isinstance(value, dict):
        return {k: _pruned(v) for k, v in value.items() if v not in ("", {}, [])}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def test_the_vendored_proto_is_the_one_the_sdk_compiles_for_0_3():
    ours = descriptor_pb2.FileDescriptorProto.FromString(A2A_V0_3_PROTO)
    sdk = descriptor_pb2.FileDescriptorProto.FromString(sdk_pb.DESCRIPTOR.serialized_pb)
    assert (ours.name, ours.package) == ("a2a_v0_3.proto", "a2a.v1")
    ours.ClearField("options")  # buf's managed mode rewrote the SDK's file options; nothing else differs
    sdk.ClearField("options")
    assert ours == sdk


def test_a_task_reaches_the_sdk_as_the_same_0_3_task():
    ours = grpc_wire_v03.from_dict(proto_v03.task_out(TASK), "Task")
    theirs = sdk_pb.Task.FromString(ours.SerializeToString())
    assert v03(proto_utils.FromProto.task(theirs)) == v03(types.Task.model_validate(TASK))


@pytest.mark.parametrize("item", [
    TASK,
    {"kind": "message", "messageId": "m3", "role": "agent", "parts": [{"kind": "text", "text": "done"}]},
    {"kind": "status-update", "taskId": "t1", "contextId": "c1", "final": True,
     "status": {"state": "completed", "timestamp": "2026-01-02T03:04:05Z"}},
    {"kind": "artifact-update", "taskId": "t1", "contextId": "c1", "append": True, "lastChunk": False,
     "artifact": {"artifactId": "a1", "parts": [{"kind": "text", "text": "4"}]}},
], ids=["task", "message", "status-update", "artifact-update"])
def test_each_stream_item_reaches_the_sdk_unchanged(item):
    ours = grpc_wire_v03.from_dict(proto_v03.stream_item_out(item), "StreamResponse")
    theirs = proto_utils.FromProto.stream_response(sdk_pb.StreamResponse.FromString(ours.SerializeToString()))
    expected = {"task": types.Task, "message": types.Message, "status-update": types.TaskStatusUpdateEvent,
                "artifact-update": types.TaskArtifactUpdateEvent}[item["kind"]].model_validate(item)
    assert v03(theirs) == v03(expected)


def test_what_the_sdk_sends_becomes_the_0_3_params():
    message = types.Message.model_validate({**TASK["history"][0], "parts": TASK["history"][0]["parts"]})
    config = types.MessageSendConfiguration(accepted_output_modes=["text/plain"], history_length=2, blocking=True,
                                            push_notification_config=types.PushNotificationConfig(
                                                id="h1", url="https://hook.example/x", token="s"))
    request = sdk_pb.SendMessageRequest(request=proto_utils.ToProto.message(message),
                                        configuration=proto_utils.ToProto.message_send_configuration(config),
                                        metadata=proto_utils.ToProto.metadata({"trace": "1"}))
    rpc = grpc_wire_v03.RPCS["SendMessage"]
    ours = grpc_wire_v03.message_class(rpc.request).FromString(request.SerializeToString())
    params = rpc.params(grpc_wire.to_dict(ours))
    expected = v03(types.MessageSendParams(message=message, configuration=config, metadata={"trace": "1"}))
    assert params == expected


def test_file_bytes_are_the_raw_bytes_the_proto_says():
    """The proto's ``file_with_bytes`` holds the file's bytes, as over HTTP+JSON 0.3. The
    0.3 SDK's converters put the base64 text's UTF-8 there instead (``proto_utils``:
    ``file.bytes.encode('utf-8')``, and ``.decode('utf-8')`` reading), so a file's bytes
    don't round-trip with that SDK over gRPC; text, URLs and data do."""
    part = {"kind": "file", "file": {"bytes": "aGVsbG8=", "mimeType": "text/plain"}}
    ours = grpc_wire_v03.from_dict(proto_v03.part_out(part), "Part")
    assert sdk_pb.Part.FromString(ours.SerializeToString()).file.file_with_bytes == b"hello"
    back = proto_v03.part_in(grpc_wire.to_dict(ours))
    assert back == part


def test_resource_names_become_ids_and_a_bad_one_is_invalid_params():
    assert grpc_wire_v03.RPCS["GetTask"].params({"name": "tasks/t1", "historyLength": 3}) == {
        "id": "t1", "historyLength": 3}
    assert grpc_wire_v03.RPCS["GetTask"].params({"name": "tasks/t1"}) == {"id": "t1"}  # proto3's 0: unset
    assert grpc_wire_v03.RPCS["GetTaskPushNotificationConfig"].params(
        {"name": "tasks/t1/pushNotificationConfigs/h1"}) == {"id": "t1", "pushNotificationConfigId": "h1"}
    created = grpc_wire_v03.RPCS["CreateTaskPushNotificationConfig"].params(
        {"parent": "tasks/t1", "configId": "h1", "config": {"pushNotificationConfig": {"url": "https://h.example"}}})
    assert created == {"taskId": "t1", "pushNotificationConfig": {"id": "h1", "url": "https://h.example"}}
    for rpc, body in [("GetTask", {"name": "t1"}), ("CancelTask", {}),
                      ("DeleteTaskPushNotificationConfig", {"name": "tasks/t1"})]:
        with pytest.raises(ValidationError, match="Bad resource name"):
            grpc_wire_v03.RPCS[rpc].params(body)


def test_errors_are_the_statuses_the_0_3_sdk_sends():
    assert grpc_wire_v03.status({"code": -32001, "message": "Task not found"}) == (
        "NOT_FOUND", "TaskNotFoundError: Task not found")
    assert grpc_wire_v03.status({"code": -32002, "message": "no"}) == ("UNIMPLEMENTED", "TaskNotCancelableError: no")
    assert grpc_wire_v03.status({"code": -32602, "message": "bad"})[0] == "INVALID_ARGUMENT"
    assert grpc_wire_v03.status({"code": 12345, "message": "odd"}) == ("INTERNAL", "InternalError: odd")
    full = grpc_wire_v03.status({"code": -32603, "message": "full", "data": {"reason": "storage_full"}})
    assert full == ("RESOURCE_EXHAUSTED", "InternalError: full")


def test_the_0_3_card_reaches_the_sdk_with_its_security():
    spec = cards.AgentCardSpec(name="Echo", description="echoes", version="1.0.0", url="http://h:1/a2a",
                               bearer=True, api_key_header="X-API-Key",
                               grpc_url="h:2")
    card = cards.card_v03(spec, extended=True)
    ours = grpc_wire_v03.from_dict(proto_v03.card_out(card), "AgentCard")
    theirs = proto_utils.FromProto.agent_card(sdk_pb.AgentCard.FromString(ours.SerializeToString()))
    assert theirs.name == "Echo" and theirs.url == "http://h:1/a2a"
    assert {(i.transport, i.url) for i in theirs.additional_interfaces or ()} >= {("GRPC", "h:2")}
    schemes = {name: v03(s) for name, s in (theirs.security_schemes or {}).items()}
    assert schemes["bearerAuth"] == {"type": "http", "scheme": "Bearer"}
    assert schemes["apiKey"] == {"type": "apiKey", "in": "header", "name": "X-API-Key"}
    assert theirs.security == [{"bearerAuth": []}, {"apiKey": []}]
