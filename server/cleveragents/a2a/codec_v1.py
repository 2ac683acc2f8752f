"""The A2A 1.0 codec: ProtoJSON, as ``specification/a2a.proto`` defines it.

camelCase fields, ``TASK_STATE_*`` and ``ROLE_*`` enums, flat parts (``{"text"}``,
``{"raw"}`` in base64, ``{"url"}`` or ``{"data"}`` with optional ``mediaType``,
``filename``, ``metadata``), no ``kind`` tags, and results and stream items wrapped
as ``{"task"}``, ``{"message"}``, ``{"statusUpdate"}`` or ``{"artifactUpdate"}``.

Most of the shape is shared with 0.3, which subclasses this codec. 1.0 has no
``final`` on status updates: a stream ends at a terminal or interrupted state
(``codecs.ends_stream``), and an update whose ``final`` says otherwise carries it in
the metadata key ``cleveragents/final``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlparse

from cleveragents.a2a.codecs import (
    RESERVED_PREFIX,
    Json,
    Loc,
    SendRequest,
    as_object,
    bytes_in,
    bytes_out,
    ends_stream,
    invalid,
    metadata_in,
    opt_bool,
    opt_count,
    opt_list,
    opt_str,
    parse_role,
    parse_state,
    parts_list,
    put,
    req_str,
    required,
    str_tuple,
    timestamp_in,
)
from cleveragents.domain.task import (
    Artifact,
    Message,
    Part,
    PushConfig,
    Role,
    StreamItem,
    Task,
    TaskArtifactUpdate,
    TaskState,
    TaskStatus,
    TaskStatusUpdate,
)
from cleveragents.ids import new_id

FINAL_KEY = RESERVED_PREFIX + "final"

_PART_CONTENT = {"text": "text", "raw": "file", "url": "file", "fileWithBytes": "file",
                 "fileWithUri": "file", "data": "data"}
_STREAM_KEYS = ("task", "message", "statusUpdate", "artifactUpdate")


class V1Codec:
    version = "1.0"
    tagged = False  # 0.3 tags objects with `kind`

    def __init__(self, *, lenient: bool = False) -> None:
        # Lenient: what a peer agent answers, read as well as it can be (a missing
        # messageId is made up, an untagged 0.3 part is read by its fields). Requests
        # to this server are read strictly.
        self.lenient = lenient

    def state_to_wire(self, state: TaskState) -> str:
        return f"TASK_STATE_{state.name}"

    def role_to_wire(self, role: Role) -> str:
        return f"ROLE_{role.name}"

    def encode_part(self, part: Part) -> Json:
        if part.text is not None and part.media_type is None and part.filename is None and not part.metadata:
            return {"text": part.text}  # the usual part
        out: Json = {}
        if part.text is not None:
            out["text"] = part.text
        elif part.raw is not None:
            out["raw"] = bytes_out(part.raw)
        elif part.url is not None:
            out["url"] = part.url
        else:
            out["data"] = part.data
        put(out, "mediaType", part.media_type)
        put(out, "filename", part.filename)
        put(out, "metadata", part.metadata)
        return out

    def encode_status_update(self, update: TaskStatusUpdate) -> Json:
        out = self._new("status-update")
        out.update(taskId=update.task_id, contextId=update.context_id,
                   status=self.encode_task_status(update.status))
        metadata = update.metadata
        if update.final != ends_stream(update.status.state):
            metadata = {**(metadata or {}), FINAL_KEY: update.final}
        put(out, "metadata", metadata)
        return out

    def decode_status_update(self, value: Any, loc: Loc = ()) -> TaskStatusUpdate:
        d = self._open(value, "status-update", loc)
        status = self.decode_task_status(required(d, "status", loc), (*loc, "status"))
        metadata = metadata_in(d, "metadata", loc)
        final = opt_bool(d, "final", loc)  # not 1.0, but a 0.3 peer may send it
        if metadata is not None and FINAL_KEY in metadata:
            final = bool(metadata.pop(FINAL_KEY))
            metadata = metadata or None
        return TaskStatusUpdate(
            task_id=req_str(d, "taskId", loc), context_id=opt_str(d, "contextId", loc) or "",
            status=status, final=ends_stream(status.state) if final is None else final, metadata=metadata,
        )

    def encode_stream_item(self, item: StreamItem) -> Json:
        if isinstance(item, Task):
            return {"task": self.encode_task(item)}
        if isinstance(item, Message):
            return {"message": self.encode_message(item)}
        if isinstance(item, TaskStatusUpdate):
            return {"statusUpdate": self.encode_status_update(item)}
        return {"artifactUpdate": self.encode_artifact_update(item)}

    def decode_stream_item(self, value: Any, loc: Loc = ()) -> StreamItem:
        return self._unwrap(value, loc, _STREAM_KEYS)

    def encode_send_result(self, result: Task | Message) -> Json:
        return self.encode_stream_item(result)

    def decode_send_result(self, value: Any, loc: Loc = ()) -> Task | Message:
        return self._unwrap(value, loc, _STREAM_KEYS[:2])  # type: ignore[return-value]

    def _unwrap(self, value: Any, loc: Loc, keys: Sequence[str]) -> StreamItem:
        d = as_object(value, loc)
        present = [key for key in keys if d.get(key) is not None]
        if len(present) != 1:
            raise invalid(loc, f"Expected exactly one of {', '.join(keys)}")
        key = present[0]
        decoders: dict[str, Callable[[Any, Loc], StreamItem]] = {
            "task": self.decode_task, "message": self.decode_message,
            "statusUpdate": self.decode_status_update, "artifactUpdate": self.decode_artifact_update}
        return decoders[key](d[key], (*loc, key))

    def encode_push_config(self, config: PushConfig) -> Json:
        out: Json = {"id": config.id, "taskId": config.task_id, "url": config.url}
        put(out, "token", config.token)
        if config.authentication:
            auth: Json = {"scheme": config.authentication["scheme"]}
            put(auth, "credentials", config.authentication.get("credentials"))
            out["authentication"] = auth
        return out

    # -- the rest is shared with 0.3 -----------------------------------------------
    def state_from_wire(self, value: str, loc: Loc = ()) -> TaskState:
        """Any spelling of either dialect."""
        return parse_state(value, loc)

    def _new(self, kind: str) -> Json:
        return {"kind": kind} if self.tagged else {}

    def _open(self, value: Any, kind: str, loc: Loc) -> Json:
        d = as_object(value, loc)
        if d.get("kind") not in (None, kind):
            raise invalid((*loc, "kind"), f"Expected kind {kind!r}", "literal_error")
        return d

    # -- parts: one liberal decoder for every shape either dialect or older code sends --
    def decode_part(self, value: Any, loc: Loc = ()) -> Part:
        d = as_object(value, loc)
        if self.tagged and d.get("kind") is None and not self.lenient and any(key in d for key in (*_PART_CONTENT, "file")):
            # 0.3 parts are tagged: one with content but no kind is not read as text. One with
            # no content either gets the error below, which names what a part holds.
            raise invalid((*loc, "kind"), "Field required", "missing")
        if type(text := d.get("text")) is str and (len(d) == 1 or (len(d) == 2 and d.get("kind") == "text")):
            return Part(text)  # the usual part, {"text"} or 0.3's {"kind": "text", "text"}
        kind = d.get("kind")
        if kind not in (None, "text", "file", "data"):
            raise invalid((*loc, "kind"), f"Unknown part kind {kind!r}: expected text, file or data", "enum")
        common: Json = {"media_type": opt_str(d, "mediaType", loc), "filename": opt_str(d, "filename", loc),
                        "metadata": metadata_in(d, "metadata", loc)}
        if kind == "file" or d.get("file") is not None:
            return self._file_part_in(d, common, loc)
        present = [key for key in _PART_CONTENT if d.get(key) is not None] or (["data"] if "data" in d else [])
        if len(present) != 1:
            raise invalid(loc, "A part needs exactly one of text, raw, url or data")
        key = present[0]
        if kind is not None and _PART_CONTENT[key] != kind:
            raise invalid((*loc, kind), "Field required", "missing")
        if key == "text":
            return Part(text=req_str(d, "text", loc), **common)
        if _PART_CONTENT[key] == "file":
            if key in ("raw", "fileWithBytes"):
                return Part(raw=bytes_in(d, key, loc), **common)
            return Part(url=req_str(d, key, loc), **common)
        data, common["metadata"] = self._data_in(d["data"], common["metadata"], (*loc, "data"))
        return Part.of_data(data, **common)

    def _file_part_in(self, d: Json, common: Json, loc: Loc) -> Part:
        """0.3: ``{"kind": "file", "file": {"bytes" | "uri", "mimeType", "name"}}``."""
        floc = (*loc, "file")
        f = as_object(required(d, "file", loc), floc)
        for key, field in (("mimeType", "media_type"), ("name", "filename")):
            if (value := opt_str(f, key, floc)) is not None:
                common[field] = value
        present = [key for key in ("bytes", "uri") if f.get(key) is not None]
        if len(present) != 1:
            raise invalid(floc, "A file needs exactly one of bytes or uri")
        if present == ["bytes"]:
            return Part(raw=bytes_in(f, "bytes", floc), **common)
        return Part(url=req_str(f, "uri", floc), **common)

    def _data_in(self, data: Any, metadata: dict[str, Any] | None, loc: Loc) -> tuple[Any, dict[str, Any] | None]:
        """The content of a data part; a dialect may unwrap what its encoder wrapped."""
        return data, metadata

    # -- messages, artifacts, tasks -------------------------------------------------
    def encode_message(self, message: Message) -> Json:
        out = self._new("message")
        out["messageId"] = message.message_id
        out["role"] = self.role_to_wire(message.role)
        out["parts"] = [self.encode_part(p) for p in message.parts]
        put(out, "contextId", message.context_id)
        put(out, "taskId", message.task_id)
        if message.metadata or message.extensions or message.reference_task_ids:  # seldom any
            put(out, "metadata", message.metadata)
            put(out, "extensions", message.extensions)
            put(out, "referenceTaskIds", message.reference_task_ids)
        return out

    def decode_message(self, value: Any, loc: Loc = ()) -> Message:
        d = self._open(value, "message", loc)
        parts = parts_list(d, loc)
        return Message(
            message_id=(opt_str(d, "messageId", loc) or new_id()) if self.lenient else req_str(d, "messageId", loc),
            role=parse_role(required(d, "role", loc), (*loc, "role")),
            parts=tuple(self.decode_part(p, (*loc, "parts", i)) for i, p in enumerate(parts)),
            context_id=opt_str(d, "contextId", loc), task_id=opt_str(d, "taskId", loc),
            metadata=metadata_in(d, "metadata", loc), extensions=str_tuple(d, "extensions", loc),
            reference_task_ids=str_tuple(d, "referenceTaskIds", loc),
        )

    def encode_artifact(self, artifact: Artifact) -> Json:
        out: Json = {"artifactId": artifact.artifact_id, "parts": [self.encode_part(p) for p in artifact.parts]}
        put(out, "name", artifact.name)
        put(out, "description", artifact.description)
        put(out, "metadata", artifact.metadata)
        put(out, "extensions", artifact.extensions)
        return out

    def decode_artifact(self, value: Any, loc: Loc = ()) -> Artifact:
        d = as_object(value, loc)
        parts = parts_list(d, loc)
        return Artifact(
            artifact_id=req_str(d, "artifactId", loc),
            parts=tuple(self.decode_part(p, (*loc, "parts", i)) for i, p in enumerate(parts)),
            name=opt_str(d, "name", loc), description=opt_str(d, "description", loc),
            metadata=metadata_in(d, "metadata", loc), extensions=str_tuple(d, "extensions", loc),
        )

    def encode_task_status(self, status: TaskStatus) -> Json:
        out: Json = {"state": self.state_to_wire(status.state)}
        put(out, "message", self.encode_message(status.message) if status.message else None)
        put(out, "timestamp", status.timestamp)
        return out

    def decode_task_status(self, value: Any, loc: Loc = ()) -> TaskStatus:
        d = as_object(value, loc)
        message = d.get("message")
        return TaskStatus(
            state=parse_state(required(d, "state", loc), (*loc, "state")),
            timestamp=timestamp_in(d, "timestamp", loc),
            message=None if message is None else self.decode_message(message, (*loc, "message")),
        )

    def encode_task(self, task: Task) -> Json:
        out = self._new("task")
        out.update(id=task.id, contextId=task.context_id, status=self.encode_task_status(task.status))
        put(out, "history", [self.encode_message(m) for m in task.history])
        put(out, "artifacts", [self.encode_artifact(a) for a in task.artifacts])
        put(out, "metadata", task.metadata)
        return out

    def decode_task(self, value: Any, loc: Loc = ()) -> Task:
        d = self._open(value, "task", loc)
        return Task(
            id=req_str(d, "id", loc), context_id=opt_str(d, "contextId", loc) or "",
            status=self.decode_task_status(required(d, "status", loc), (*loc, "status")),
            history=tuple(self.decode_message(m, (*loc, "history", i))
                          for i, m in enumerate(opt_list(d, "history", loc))),
            artifacts=tuple(self.decode_artifact(a, (*loc, "artifacts", i))
                            for i, a in enumerate(opt_list(d, "artifacts", loc))),
            metadata=metadata_in(d, "metadata", loc),
        )

    def encode_artifact_update(self, update: TaskArtifactUpdate) -> Json:
        out = self._new("artifact-update")
        out.update(taskId=update.task_id, contextId=update.context_id,
                   artifact=self.encode_artifact(update.artifact))
        if update.append:
            out["append"] = True
        if update.last_chunk:
            out["lastChunk"] = True
        put(out, "metadata", update.metadata)
        return out

    def decode_artifact_update(self, value: Any, loc: Loc = ()) -> TaskArtifactUpdate:
        d = self._open(value, "artifact-update", loc)
        return TaskArtifactUpdate(
            task_id=req_str(d, "taskId", loc), context_id=opt_str(d, "contextId", loc) or "",
            artifact=self.decode_artifact(required(d, "artifact", loc), (*loc, "artifact")),
            append=bool(opt_bool(d, "append", loc)), last_chunk=bool(opt_bool(d, "lastChunk", loc)),
            metadata=metadata_in(d, "metadata", loc),
        )

    def encode_list_result(self, tasks: Sequence[Task], next_page_token: str | None,
                           page_size: int, total_size: int) -> Json:
        return {"tasks": [self.encode_task(t) for t in tasks], "nextPageToken": next_page_token or "",
                "pageSize": page_size, "totalSize": total_size}

    # -- requests -----------------------------------------------------------------
    def decode_send_params(self, params: Any) -> SendRequest:
        """The whole params object; the server reads its fields from the facade's model."""
        p = as_object(params, ())
        return self.decode_send(required(p, "message", ()), p.get("configuration"), p.get("metadata"))

    def decode_send(self, message: Any, configuration: Any = None, metadata: Any = None) -> SendRequest:
        """SendMessage's params, field by field. Either dialect's configuration names are
        accepted: ``returnImmediately`` (1.0) or ``blocking`` (0.3),
        ``taskPushNotificationConfig`` or ``pushNotificationConfig``."""
        decoded = self.decode_message(message, ("message",))
        if configuration is None:  # all defaults
            return SendRequest(message=decoded, metadata=_metadata(metadata))
        loc: Loc = ("configuration",)
        conf = as_object(configuration, loc)
        blocking, immediate = opt_bool(conf, "blocking", loc), opt_bool(conf, "returnImmediately", loc)
        if blocking is not None and immediate is not None and blocking == immediate:
            raise invalid(loc, "blocking and returnImmediately contradict each other")
        push_key = "taskPushNotificationConfig" if "taskPushNotificationConfig" in conf else "pushNotificationConfig"
        push = conf.get(push_key)
        return SendRequest(
            message=decoded,
            blocking=(not immediate) if immediate is not None else blocking is not False,
            history_length=opt_count(conf, "historyLength", loc),
            accepted_output_modes=str_tuple(conf, "acceptedOutputModes", loc),
            push_config=None if push is None else self._push_config_in(push, (*loc, push_key), False),
            metadata=_metadata(metadata),
        )

    # Which push config a Get/List/Delete names: (task id, config id) under these keys.
    config_ref_keys = ("taskId", "id")

    def decode_push_config_ref(self, params: Any, config_required: bool = False) -> tuple[str, str | None]:
        task_key, config_key = self.config_ref_keys
        d = as_object(params, ())
        task_id, config_id = d.get(task_key), d.get(config_key)
        if not isinstance(task_id, str) or not task_id:
            raise invalid((task_key,), "the task's id is required")
        if config_id is not None and not isinstance(config_id, str):
            raise invalid((config_key,), "must be a string")
        if config_required and config_id is None:
            raise invalid((config_key,), "the config's id is required")
        return task_id, config_id

    def decode_push_config(self, params: Any, task_id_required: bool = True) -> PushConfig:
        """A 1.0 TaskPushNotificationConfig (flat) or a 0.3 one (``{taskId,
        pushNotificationConfig}``). A missing id gets a fresh one; a missing task id
        (when not required) is ""."""
        return self._push_config_in(params, (), task_id_required)

    def _push_config_in(self, value: Any, loc: Loc, task_id_required: bool) -> PushConfig:
        d = as_object(value, loc)
        task_id = opt_str(d, "taskId", loc)
        if task_id_required and not task_id:
            raise invalid((*loc, "taskId"), "Field required", "missing")
        if d.get("pushNotificationConfig") is not None:
            loc = (*loc, "pushNotificationConfig")
            d = as_object(d["pushNotificationConfig"], loc)
        url = req_str(d, "url", loc)
        try:
            parts = urlparse(url)
        except ValueError:  # a bracketed host that isn't closed, or isn't an IPv6 address
            parts = None
        if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
            raise invalid((*loc, "url"), "Input should be an absolute http(s) URL", "url_parsing")
        return PushConfig(id=opt_str(d, "id", loc) or new_id(), task_id=task_id or "", url=url,
                          token=opt_str(d, "token", loc), authentication=self._authentication_in(d, loc))

    @staticmethod
    def _authentication_in(d: Json, loc: Loc) -> dict[str, Any] | None:
        """1.0 names one ``scheme``; 0.3 lists ``schemes``, of which the first is used."""
        if d.get("authentication") is None:
            return None
        loc = (*loc, "authentication")
        auth = as_object(d["authentication"], loc)
        scheme = opt_str(auth, "scheme", loc) or next(iter(str_tuple(auth, "schemes", loc)), None)
        if not scheme:
            raise invalid((*loc, "scheme"), "Field required", "missing")
        out: dict[str, Any] = {"scheme": scheme}
        put(out, "credentials", opt_str(auth, "credentials", loc))
        return out


def _metadata(value: Any) -> dict[str, Any] | None:
    return None if value is None else dict(as_object(value, ("metadata",))) or None
