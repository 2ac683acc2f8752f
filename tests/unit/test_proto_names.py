"""ProtoJSON names in 1.0 requests: the table against the official SDK's proto
descriptors, and the renaming itself."""

from __future__ import annotations

import pytest

from cleveragents.a2a import dialects, methods
from cleveragents.a2a.proto_names import REQUESTS, SCHEMA, json_name, to_json_names
from cleveragents.domain.errors import ValidationError

pb = pytest.importorskip("a2a.types.a2a_pb2")
EXTRA_03_NAMES = {"SendMessageConfiguration": {"blocking", "push_notification_config"},
                  "TaskPushNotificationConfig": {"push_notification_config"}, "AuthenticationInfo": {"schemes"}}


def test_every_1_0_method_has_its_request_message():
    assert set(REQUESTS) == set(methods.names_by_dialect(dialects.A2A_V1))
    for method, message in REQUESTS.items():
        assert message in pb.DESCRIPTOR.message_types_by_name, method


@pytest.mark.parametrize("message", sorted(SCHEMA))
def test_the_schema_is_the_protos(message):
    descriptor = pb.DESCRIPTOR.message_types_by_name[message]
    ours = {name: inner for name, inner in SCHEMA[message].items()
            if name not in EXTRA_03_NAMES.get(message, ())}
    theirs = {}
    for field in descriptor.fields:
        inner = field.message_type
        theirs[field.name] = None if inner is None or inner.full_name.startswith("google.protobuf") else inner.name
        assert json_name(field.name) == field.json_name
    assert ours == theirs


def test_proto_names_become_json_names_at_every_level_but_free_form_values():
    params = {"message": {"message_id": "m1", "context_id": "c", "parts": [
                  {"text": "hi", "media_type": "text/plain", "metadata": {"keep_me": 1}},
                  {"data": {"task_id": "not a field"}}],
              "metadata": {"snake_key": True}, "reference_task_ids": ["t0"]},
              "configuration": {"history_length": 2, "return_immediately": True,
                                "task_push_notification_config": {"url": "https://x.example/h", "task_id": "t"}},
              "metadata": {"history_length": "user data"}}
    assert to_json_names("SendMessage", params) == {
        "message": {"messageId": "m1", "contextId": "c", "parts": [
            {"text": "hi", "mediaType": "text/plain", "metadata": {"keep_me": 1}},
            {"data": {"task_id": "not a field"}}],
            "metadata": {"snake_key": True}, "referenceTaskIds": ["t0"]},
        "configuration": {"historyLength": 2, "returnImmediately": True,
                          "taskPushNotificationConfig": {"url": "https://x.example/h", "taskId": "t"}},
        "metadata": {"history_length": "user data"}}


def test_json_names_pass_through_untouched():
    params = {"id": "t", "historyLength": 0}
    assert to_json_names("GetTask", params) is params
    assert to_json_names("session.list", {"page_size": 1}) == {"page_size": 1}  # not a 1.0 method


def test_a_field_under_both_names_must_agree():
    assert to_json_names("GetTask", {"id": "t", "history_length": 1, "historyLength": 1}) == {
        "id": "t", "historyLength": 1}
    with pytest.raises(ValidationError) as raised:
        to_json_names("GetTask", {"id": "t", "history_length": 0, "historyLength": 3})
    assert raised.value.data["errors"][0]["loc"] == ["historyLength"]
    assert raised.value.data["method"] == "GetTask"
