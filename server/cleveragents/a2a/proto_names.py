"""A2A 1.0 requests in ProtoJSON: the original proto field names are JSON names too.

A ProtoJSON parser accepts each field under its lowerCamel JSON name (``taskId``) and
under its proto name (``task_id``); printers always write lowerCamel. ``to_json_names``
renames a 1.0 request's proto names to JSON names before anything reads the params.
It knows each request message's fields and the messages inside them, so it renames
only real fields: the keys inside ``metadata`` (a ``Struct``), a data part's ``data``
(a ``Value``) and anything else free-form are the sender's, and stay as they are.

The schema is ``specification/a2a.proto`` (v1.0); a test holds it to the SDK's
descriptors. A few names the 0.3 dialect used, which the 1.0 codec also takes
(``blocking``, ``pushNotificationConfig``, ``schemes``), are here too.
"""

from __future__ import annotations

from typing import Any

from cleveragents.domain.errors import ValidationError

# message -> {proto field name: the message its value holds, or None for a scalar,
# an enum or a free-form value}. Repeated fields hold a list of that message.
SCHEMA: dict[str, dict[str, str | None]] = {
    "SendMessageRequest": {"tenant": None, "message": "Message", "configuration": "SendMessageConfiguration",
                           "metadata": None},
    "Message": {"message_id": None, "context_id": None, "task_id": None, "role": None, "parts": "Part",
                "metadata": None, "extensions": None, "reference_task_ids": None},
    "Part": {"text": None, "raw": None, "url": None, "data": None, "metadata": None, "filename": None,
             "media_type": None},
    "SendMessageConfiguration": {"accepted_output_modes": None,
                                 "task_push_notification_config": "TaskPushNotificationConfig",
                                 "history_length": None, "return_immediately": None,
                                 "blocking": None, "push_notification_config": "TaskPushNotificationConfig"},
    "TaskPushNotificationConfig": {"tenant": None, "id": None, "task_id": None, "url": None, "token": None,
                                   "authentication": "AuthenticationInfo",
                                   "push_notification_config": "TaskPushNotificationConfig"},
    "AuthenticationInfo": {"scheme": None, "credentials": None, "schemes": None},
    "GetTaskRequest": {"tenant": None, "id": None, "history_length": None},
    "ListTasksRequest": {"tenant": None, "context_id": None, "status": None, "page_size": None,
                         "page_token": None, "history_length": None, "status_timestamp_after": None,
                         "include_artifacts": None},
    "CancelTaskRequest": {"tenant": None, "id": None, "metadata": None},
    "SubscribeToTaskRequest": {"tenant": None, "id": None},
    "GetTaskPushNotificationConfigRequest": {"tenant": None, "task_id": None, "id": None},
    "ListTaskPushNotificationConfigsRequest": {"tenant": None, "task_id": None, "page_size": None,
                                               "page_token": None},
    "DeleteTaskPushNotificationConfigRequest": {"tenant": None, "task_id": None, "id": None},
    "GetExtendedAgentCardRequest": {"tenant": None},
}

# Each 1.0 method and the message its params are.
REQUESTS: dict[str, str] = {
    "SendMessage": "SendMessageRequest",
    "SendStreamingMessage": "SendMessageRequest",
    "GetTask": "GetTaskRequest",
    "ListTasks": "ListTasksRequest",
    "CancelTask": "CancelTaskRequest",
    "SubscribeToTask": "SubscribeToTaskRequest",
    "CreateTaskPushNotificationConfig": "TaskPushNotificationConfig",
    "GetTaskPushNotificationConfig": "GetTaskPushNotificationConfigRequest",
    "ListTaskPushNotificationConfigs": "ListTaskPushNotificationConfigsRequest",
    "DeleteTaskPushNotificationConfig": "DeleteTaskPushNotificationConfigRequest",
    "GetExtendedAgentCard": "GetExtendedAgentCardRequest",
}


def json_name(proto_name: str) -> str:
    """protoc's rule: drop each underscore and capitalize the letter after it."""
    head, *rest = proto_name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


# message -> {a field's proto or JSON name: (its JSON name, its message or None)}
_KNOWN = {message: {name: (json_name(proto), inner) for proto, inner in fields.items()
                    for name in (proto, json_name(proto))}
          for message, fields in SCHEMA.items()}


def to_json_names(method: str, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` with every proto field name of ``method``'s request renamed to its JSON
    name; the same object when there is none to rename."""
    message = REQUESTS.get(method)
    if message is None:
        return params
    try:
        return _rename(params, message, ())
    except _GivenTwice as twice:
        key, name, loc = twice.args
        raise ValidationError(f"Invalid params: {name} is given twice, as {key} and {name}", {
            "method": method, "errors": [{"loc": list(loc), "msg": f"given twice, as {key} and {name}",
                                          "type": "duplicate"}]}) from None


class _GivenTwice(Exception):
    """A field under both of its names, with different values."""


def _rename(value: dict[str, Any], message: str, loc: tuple[str | int, ...]) -> dict[str, Any]:
    known = _KNOWN[message]
    out: dict[str, Any] = {}
    changed = False
    for key, item in value.items():
        name, inner = known.get(key, (key, None))
        if name != key:
            if name in value and value[name] != item:
                raise _GivenTwice(key, name, (*loc, name))
            changed = True
        if inner is not None:
            renamed = _rename_inner(item, inner, (*loc, name))
            changed = changed or renamed is not item
            item = renamed
        out[name] = item
    return out if changed else value


def _rename_inner(item: Any, message: str, loc: tuple[str | int, ...]) -> Any:
    if isinstance(item, dict):
        return _rename(item, message, loc)
    if isinstance(item, list):
        renamed = [_rename(element, message, (*loc, n)) if isinstance(element, dict) else element
                   for n, element in enumerate(item)]
        return item if all(new is old for new, old in zip(renamed, item, strict=True)) else renamed
    return item  # not an object: the codec says what is wrong with it
