"""The A2A 0.3 HTTP+JSON binding's bodies: the ProtoJSON of ``specification/grpc/a2a.proto``
of v0.3.0, translated to and from the 0.3 JSON-RPC shapes that the 0.3 codec reads
and writes. The binding's routes (``transports/http/rest_v03.py``) dispatch the 0.3
methods; only the bodies differ.

Where the two differ: a message's parts are ``content``; a part is ``{"text"}``,
``{"file": {"fileWithUri" | "fileWithBytes", "mimeType", "name"}}`` or ``{"data":
{"data": {...}}}``, untagged; states and roles are enums (``TASK_STATE_CANCELLED``,
``ROLE_USER``); stream items and send results are wrapped (``{"task"}``,
``{"message"}``, ``{"statusUpdate"}``, ``{"artifactUpdate"}``); a push config is
``{"name": "tasks/{id}/pushNotificationConfigs/{configId}", "pushNotificationConfig"}``.

Input is read as a ProtoJSON parser reads it: each field by its lowerCamel JSON name
or its proto name (``message_id``). What has no place in the other shape is left as
it is, for the codec to refuse with the field's location. Output has only the
proto's fields: a strict ProtoJSON parser reads it.
"""

from __future__ import annotations

from typing import Any

Json = dict[str, Any]

STATES = {
    "submitted": "TASK_STATE_SUBMITTED", "working": "TASK_STATE_WORKING", "completed": "TASK_STATE_COMPLETED",
    "failed": "TASK_STATE_FAILED", "canceled": "TASK_STATE_CANCELLED", "input-required": "TASK_STATE_INPUT_REQUIRED",
    "rejected": "TASK_STATE_REJECTED", "auth-required": "TASK_STATE_AUTH_REQUIRED",
}
ROLES_OUT = {"user": "ROLE_USER", "agent": "ROLE_AGENT"}
ROLES_IN = {"ROLE_USER": "user", "ROLE_AGENT": "agent", 1: "user", 2: "agent"}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word.title() for word in rest)


def field(d: Json, name: str, default: Any = None) -> Any:
    """``d``'s field ``name`` (proto spelling), by its JSON name or its proto name."""
    camel = _camel(name)
    if camel in d:
        return d[camel]
    return d.get(name, default)


def _put(out: Json, key: str, value: Any) -> None:
    if value is not None and value != [] and value != {}:
        out[key] = value


# -- in: ProtoJSON request bodies -> 0.3 JSON-RPC params --------------------------------
def part_in(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    out: Json
    if "text" in value:
        out = {"kind": "text", "text": value["text"]}
    elif isinstance(value.get("file"), dict):
        file = value["file"]
        inner: Json = {}
        _put(inner, "uri", field(file, "file_with_uri"))
        _put(inner, "bytes", field(file, "file_with_bytes"))
        _put(inner, "mimeType", field(file, "mime_type"))
        _put(inner, "name", file.get("name"))
        out = {"kind": "file", "file": inner}
    elif isinstance(value.get("data"), dict):
        out = {"kind": "data", "data": value["data"].get("data", {})}
    else:
        return value  # no part the binding knows: the codec says which field is missing
    _put(out, "metadata", value.get("metadata"))
    return out


def message_in(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    out: Json = {"kind": "message"}
    for name in ("message_id", "context_id", "task_id"):
        _put(out, _camel(name), field(value, name))
    role = value.get("role")
    out["role"] = ROLES_IN.get(role, role)
    parts = field(value, "content", value.get("parts"))
    out["parts"] = [part_in(p) for p in parts] if isinstance(parts, list) else parts
    _put(out, "metadata", value.get("metadata"))
    _put(out, "extensions", value.get("extensions"))
    return out


def send_params_in(body: Json) -> Json:
    """``SendMessageRequest`` -> ``message/send`` params. A proto3 zero (``historyLength:
    0``, ``blocking: false`` left out) means unset, as the binding's clients send it."""
    params: Json = {"message": message_in(field(body, "request", body.get("message")))}
    config = body.get("configuration")
    if isinstance(config, dict):
        out: Json = {}
        _put(out, "acceptedOutputModes", field(config, "accepted_output_modes"))
        push = field(config, "push_notification")
        if isinstance(push, dict):
            out["pushNotificationConfig"] = push_in(push)
        if field(config, "history_length"):
            out["historyLength"] = field(config, "history_length")
        if "blocking" in config:
            out["blocking"] = config["blocking"]
        params["configuration"] = out
    elif config is not None:
        params["configuration"] = config
    _put(params, "metadata", body.get("metadata"))
    return params


def push_in(value: Json) -> Json:
    """A ``PushNotificationConfig``: the same fields in both shapes."""
    out: Json = {}
    for name in ("id", "url", "token"):
        _put(out, name, value.get(name))
    auth = value.get("authentication")
    if isinstance(auth, dict):
        out["authentication"] = {k: v for k, v in auth.items() if k in ("schemes", "credentials")}
    elif auth is not None:
        out["authentication"] = auth
    return out


def push_params_in(body: Json, task_id: str) -> Json:
    """The body of ``POST /v1/tasks/{id}/pushNotificationConfigs``: a
    ``CreateTaskPushNotificationConfigRequest`` (what clients send), its ``config``
    alone (what the HTTP rule names), or the bare ``PushNotificationConfig``."""
    config = body.get("config", body)
    config = config if isinstance(config, dict) else {}
    inner = field(config, "push_notification_config", config)
    inner = push_in(inner) if isinstance(inner, dict) else {}
    if "id" not in inner and isinstance(field(body, "config_id"), str) and field(body, "config_id"):
        inner["id"] = field(body, "config_id")
    return {"taskId": task_id, "pushNotificationConfig": inner}


# -- out: 0.3 JSON-RPC results -> ProtoJSON -------------------------------------------
def part_out(part: Json) -> Json:
    out: Json
    kind = part.get("kind")
    if kind == "file":
        file = part.get("file") or {}
        inner: Json = {}
        _put(inner, "fileWithUri", file.get("uri"))
        _put(inner, "fileWithBytes", file.get("bytes"))
        _put(inner, "mimeType", file.get("mimeType"))
        _put(inner, "name", file.get("name"))
        out = {"file": inner}
    elif kind == "data":
        out = {"data": {"data": part.get("data")}}
    else:
        out = {"text": part.get("text", "")}
    _put(out, "metadata", part.get("metadata"))
    return out


def message_out(message: Json) -> Json:
    out: Json = {}
    for key in ("messageId", "contextId", "taskId"):
        _put(out, key, message.get(key))
    out["role"] = ROLES_OUT.get(str(message.get("role")), "ROLE_UNSPECIFIED")
    out["content"] = [part_out(p) for p in message.get("parts") or ()]
    _put(out, "metadata", message.get("metadata"))
    _put(out, "extensions", message.get("extensions"))
    return out


def status_out(status: Json) -> Json:
    out: Json = {"state": STATES.get(str(status.get("state")), "TASK_STATE_UNSPECIFIED")}
    if isinstance(status.get("message"), dict):
        out["message"] = message_out(status["message"])
    _put(out, "timestamp", status.get("timestamp"))
    return out


def artifact_out(artifact: Json) -> Json:
    out: Json = {"artifactId": artifact.get("artifactId", "")}
    _put(out, "name", artifact.get("name"))
    _put(out, "description", artifact.get("description"))
    out["parts"] = [part_out(p) for p in artifact.get("parts") or ()]
    _put(out, "metadata", artifact.get("metadata"))
    _put(out, "extensions", artifact.get("extensions"))
    return out


def task_out(task: Json) -> Json:
    out: Json = {"id": task.get("id", ""), "contextId": task.get("contextId", ""),
                 "status": status_out(task.get("status") or {})}
    _put(out, "artifacts", [artifact_out(a) for a in task.get("artifacts") or ()])
    _put(out, "history", [message_out(m) for m in task.get("history") or ()])
    _put(out, "metadata", task.get("metadata"))
    return out


def stream_item_out(item: Json) -> Json:
    """A ``StreamResponse`` (also a ``SendMessageResponse``, for a task or a message)."""
    kind = item.get("kind")
    if kind == "message":
        return {"message": message_out(item)}
    if kind == "status-update":
        update: Json = {"taskId": item.get("taskId", ""), "contextId": item.get("contextId", ""),
                        "status": status_out(item.get("status") or {}), "final": bool(item.get("final"))}
        _put(update, "metadata", item.get("metadata"))
        return {"statusUpdate": update}
    if kind == "artifact-update":
        update = {"taskId": item.get("taskId", ""), "contextId": item.get("contextId", ""),
                  "artifact": artifact_out(item.get("artifact") or {})}
        for key in ("append", "lastChunk"):
            if item.get(key) is not None:
                update[key] = bool(item[key])
        _put(update, "metadata", item.get("metadata"))
        return {"artifactUpdate": update}
    return {"task": task_out(item)}


def push_out(config: Json) -> Json:
    inner = dict(config.get("pushNotificationConfig") or {})
    return {"name": f"tasks/{config.get('taskId', '')}/pushNotificationConfigs/{inner.get('id', '')}",
            "pushNotificationConfig": inner}


def push_list_out(configs: Any) -> Json:
    return {"configs": [push_out(c) for c in configs or ()]}


# -- the card, as the gRPC binding's AgentCard ------------------------------------------
# The 0.3 JSON scheme's ``type`` -> its one-of field in the proto's SecurityScheme.
_SCHEME_FIELDS = {"apiKey": "apiKeySecurityScheme", "http": "httpAuthSecurityScheme",
                  "oauth2": "oauth2SecurityScheme", "openIdConnect": "openIdConnectSecurityScheme",
                  "mutualTLS": "mtlsSecurityScheme"}


def _scheme_out(scheme: Any) -> Json:
    if not isinstance(scheme, dict) or scheme.get("type") not in _SCHEME_FIELDS:
        return {}
    inner = {k: v for k, v in scheme.items() if k not in ("type", "in")}
    if "in" in scheme:
        inner["location"] = scheme["in"]
    if isinstance(inner.get("flows"), dict) and inner["flows"]:  # the proto's flows are a one-of: the first
        first = next(iter(inner["flows"]))
        inner["flows"] = {first: inner["flows"][first]}
    return {_SCHEME_FIELDS[scheme["type"]]: inner}


def _security_out(requirements: Any) -> list[Json]:
    return [{"schemes": {name: {"list": list(scopes or ())} for name, scopes in r.items()}}
            for r in requirements or () if isinstance(r, dict)]


def card_out(card: Any) -> Json:
    """A 0.3 JSON card as the proto's ``AgentCard``: the same fields, but each security
    scheme in its one-of field (``{"httpAuthSecurityScheme": {...}}`` for ``{"type":
    "http", ...}``) and each requirement as ``{"schemes": {name: {"list": scopes}}}``."""
    if not isinstance(card, dict):
        return {}
    out = dict(card)
    if isinstance(card.get("securitySchemes"), dict):
        out["securitySchemes"] = {name: _scheme_out(s) for name, s in card["securitySchemes"].items()}
    if "security" in card:
        out["security"] = _security_out(card["security"])
    if isinstance(card.get("skills"), list):
        out["skills"] = [{**s, "security": _security_out(s.get("security"))} if isinstance(s, dict) and "security" in s
                         else s for s in card["skills"]]
    return out
