"""The A2A 0.3 codec: ``specification/json/a2a.json`` of A2A v0.3.0.

It differs from 1.0 (whose codec it extends) in: ``kind`` tags (``task``,
``message``, ``status-update``, ``artifact-update``), lower-case states and roles,
parts ``{"kind": "text"}``, ``{"kind": "file", "file": {"bytes" | "uri", "mimeType",
"name"}}`` and ``{"kind": "data", "data": {...}}``, ``final`` on status updates,
results and stream items sent unwrapped, and push configs nested as ``{taskId,
pushNotificationConfig}`` with a list of authentication ``schemes``.

Where 0.3 has no slot, the codec carries the value so it round-trips:
- a text or data part's media type and file name go in extra ``mediaType`` and
  ``filename`` keys of the part (the schema allows extra keys; peers ignore them);
- a data part whose value is not an object is sent as ``{"value": ...}`` with the
  metadata flag ``data_part_compat``, the a2a-sdk's convention for the same case.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cleveragents.a2a.codec_v1 import V1Codec
from cleveragents.a2a.codecs import (
    Json,
    Loc,
    as_object,
    bytes_out,
    ends_stream,
    invalid,
    metadata_in,
    opt_bool,
    opt_str,
    put,
    req_str,
    required,
)
from cleveragents.domain.task import (
    Message,
    Part,
    PushConfig,
    Role,
    StreamItem,
    Task,
    TaskState,
    TaskStatusUpdate,
)

DATA_COMPAT_KEY = "data_part_compat"


class V03Codec(V1Codec):
    version = "0.3"
    tagged = True
    config_ref_keys = ("id", "pushNotificationConfigId")

    def state_to_wire(self, state: TaskState) -> str:
        return state.value

    def role_to_wire(self, role: Role) -> str:
        return role.value

    def encode_part(self, part: Part) -> Json:
        if part.raw is not None or part.url is not None:
            file: Json = {"bytes": bytes_out(part.raw)} if part.raw is not None else {"uri": part.url}
            put(file, "mimeType", part.media_type)
            put(file, "name", part.filename)
            out: Json = {"kind": "file", "file": file}
            put(out, "metadata", part.metadata)
            return out
        metadata = part.metadata
        if part.text is not None:
            out = {"kind": "text", "text": part.text}
        elif isinstance(part.data, dict):
            out = {"kind": "data", "data": part.data}
        else:
            out = {"kind": "data", "data": {"value": part.data}}
            metadata = {**(metadata or {}), DATA_COMPAT_KEY: True}
        put(out, "metadata", metadata)
        put(out, "mediaType", part.media_type)
        put(out, "filename", part.filename)
        return out

    def _data_in(self, data: Any, metadata: dict[str, Any] | None, loc: Loc) -> tuple[Any, dict[str, Any] | None]:
        if not (metadata and metadata.get(DATA_COMPAT_KEY)):
            return data, metadata
        if not isinstance(data, dict) or "value" not in data:
            raise invalid((*loc, "value"), f"Field required when metadata.{DATA_COMPAT_KEY} is set", "missing")
        rest = {key: value for key, value in metadata.items() if key != DATA_COMPAT_KEY}
        return data["value"], rest or None

    def encode_status_update(self, update: TaskStatusUpdate) -> Json:
        out: Json = {"kind": "status-update", "taskId": update.task_id, "contextId": update.context_id,
                     "status": self.encode_task_status(update.status), "final": update.final}
        put(out, "metadata", update.metadata)
        return out

    def decode_status_update(self, value: Any, loc: Loc = ()) -> TaskStatusUpdate:
        d = self._open(value, "status-update", loc)
        status = self.decode_task_status(required(d, "status", loc), (*loc, "status"))
        final = opt_bool(d, "final", loc)
        return TaskStatusUpdate(
            task_id=req_str(d, "taskId", loc), context_id=opt_str(d, "contextId", loc) or "",
            status=status, final=ends_stream(status.state) if final is None else final,
            metadata=metadata_in(d, "metadata", loc),
        )

    def encode_stream_item(self, item: StreamItem) -> Json:
        if isinstance(item, Task):
            return self.encode_task(item)
        if isinstance(item, Message):
            return self.encode_message(item)
        if isinstance(item, TaskStatusUpdate):
            return self.encode_status_update(item)
        return self.encode_artifact_update(item)

    def decode_stream_item(self, value: Any, loc: Loc = ()) -> StreamItem:
        return self._by_kind(value, loc, ("task", "message", "status-update", "artifact-update"))

    def encode_send_result(self, result: Task | Message) -> Json:
        return self.encode_stream_item(result)

    def decode_send_result(self, value: Any, loc: Loc = ()) -> Task | Message:
        return self._by_kind(value, loc, ("task", "message"))  # type: ignore[return-value]

    def _by_kind(self, value: Any, loc: Loc, kinds: tuple[str, ...]) -> StreamItem:
        d = as_object(value, loc)
        kind = d.get("kind") or _infer_kind(d)
        decoders: dict[str, Callable[[Any, Loc], StreamItem]] = {
            "task": self.decode_task, "message": self.decode_message,
            "status-update": self.decode_status_update, "artifact-update": self.decode_artifact_update}
        decode = decoders.get(kind) if kind in kinds else None
        if decode is None:
            raise invalid((*loc, "kind"), f"Expected kind {' or '.join(kinds)}", "literal_error")
        return decode(d, loc)

    def encode_push_config(self, config: PushConfig) -> Json:
        inner: Json = {"id": config.id, "url": config.url}
        put(inner, "token", config.token)
        if config.authentication:
            auth: Json = {"schemes": [config.authentication["scheme"]]}
            put(auth, "credentials", config.authentication.get("credentials"))
            inner["authentication"] = auth
        return {"taskId": config.task_id, "pushNotificationConfig": inner}


def _infer_kind(d: Json) -> str | None:
    """For peers that leave ``kind`` out: the fields each object requires."""
    if "artifact" in d:
        return "artifact-update"
    if "status" in d:
        return "status-update" if "taskId" in d else "task"
    return "message" if "parts" in d else None
