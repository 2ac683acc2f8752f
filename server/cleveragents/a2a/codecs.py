"""What the A2A 1.0 and 0.3 codecs share: the Codec protocol, ``get_codec``, and the
readers that check wire input and name the offending field.

Both dialects are camelCase JSON with the same field names for messages, tasks and
artifacts; they differ in enum spellings, part shapes, ``kind`` tags and a few
wrappers. ``codec_v1.V1Codec`` holds the common encoding and ``codec_v03.V03Codec``
overrides the differences. Decoding is liberal (either dialect's spellings, the
older part shapes); encoding is strict to the dialect.

Conventions every codec keeps, so that decode(encode(x)) == x:
- Empty ``metadata`` is the same as none: it is not sent, and ``{}`` decodes to None.
- Timestamps are ISO-8601 UTC with milliseconds and ``Z`` (``ids.format_utc``); any
  ISO-8601 input is normalised to that form.
- ``PushConfig.authentication`` is ``{"scheme": str, "credentials"?: str}``;
  ``PushConfig.metadata`` is the server's own and never goes on the wire.
- Metadata keys under ``RESERVED_PREFIX`` carry what a dialect has no field for.
- ``CLIENT_KEY`` in a message's metadata says which client sent it (``CLI_CLIENT``:
  the `agents` command line); actors read it from the turn's message.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Protocol

from cleveragents.a2a.errors import A2AVersionMismatchError
from cleveragents.a2a.version import A2AVersionNegotiator
from cleveragents.domain.actor import CLI_CLIENT as CLI_CLIENT  # re-exported: the CLI doesn't import the domain
from cleveragents.domain.actor import CLIENT_KEY as CLIENT_KEY
from cleveragents.domain.actor import TOOL_CALL_KEY as TOOL_CALL_KEY  # re-exported for the transports
from cleveragents.domain.errors import ValidationError
from cleveragents.domain.records import record
from cleveragents.domain.task import (
    INTERRUPTED_STATES,
    MAX_PARTS,
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
from cleveragents.ids import format_utc

Loc = tuple[str | int, ...]
Json = dict[str, Any]

RESERVED_PREFIX = "cleveragents/"


@record
class SendRequest:
    """The params of SendMessage / message/send (and their streaming twins)."""

    message: Message
    blocking: bool = True
    history_length: int | None = None
    accepted_output_modes: tuple[str, ...] = ()
    # Its task_id is "" until the service has created the task.
    push_config: PushConfig | None = None
    metadata: dict[str, Any] | None = None


class Codec(Protocol):
    version: str

    def state_to_wire(self, state: TaskState) -> str: ...
    def state_from_wire(self, value: str, loc: Loc = ()) -> TaskState: ...
    def encode_part(self, part: Part) -> Json: ...
    def decode_part(self, value: Any, loc: Loc = ()) -> Part: ...
    def encode_message(self, message: Message) -> Json: ...
    def decode_message(self, value: Any, loc: Loc = ()) -> Message: ...
    def encode_artifact(self, artifact: Artifact) -> Json: ...
    def decode_artifact(self, value: Any, loc: Loc = ()) -> Artifact: ...
    def encode_task_status(self, status: TaskStatus) -> Json: ...
    def decode_task_status(self, value: Any, loc: Loc = ()) -> TaskStatus: ...
    def encode_task(self, task: Task) -> Json: ...
    def decode_task(self, value: Any, loc: Loc = ()) -> Task: ...
    def encode_status_update(self, update: TaskStatusUpdate) -> Json: ...
    def decode_status_update(self, value: Any, loc: Loc = ()) -> TaskStatusUpdate: ...
    def encode_artifact_update(self, update: TaskArtifactUpdate) -> Json: ...
    def decode_artifact_update(self, value: Any, loc: Loc = ()) -> TaskArtifactUpdate: ...
    def encode_stream_item(self, item: StreamItem) -> Json: ...
    def decode_stream_item(self, value: Any, loc: Loc = ()) -> StreamItem: ...
    def encode_send_result(self, result: Task | Message) -> Json: ...
    def decode_send_result(self, value: Any, loc: Loc = ()) -> Task | Message: ...
    def decode_send_params(self, params: Any) -> SendRequest: ...
    def decode_send(self, message: Any, configuration: Any = None, metadata: Any = None) -> SendRequest: ...
    def encode_push_config(self, config: PushConfig) -> Json: ...
    def decode_push_config(self, params: Any, task_id_required: bool = True) -> PushConfig: ...
    def decode_push_config_ref(self, params: Any, config_required: bool = False) -> tuple[str, str | None]: ...
    def encode_list_result(self, tasks: Sequence[Task], next_page_token: str | None,
                           page_size: int, total_size: int) -> Json: ...


_CODECS: dict[str, Codec] = {}
_LENIENT: dict[str, Codec] = {}


def get_codec(version: str, *, lenient: bool = False) -> Codec:
    """The codec for A2A ``version`` ("1.0", "0.3"; a patch number is ignored).
    ``lenient``: for what a peer agent answers (see ``V1Codec``)."""
    codecs = _LENIENT if lenient else _CODECS
    if (codec := codecs.get(version)) is not None:  # the common case: "1.0" or "0.3" as negotiated
        return codec
    key = A2AVersionNegotiator.normalize(version)
    if not codecs:
        # Imported here: both codec modules import this one.
        from cleveragents.a2a.codec_v03 import V03Codec
        from cleveragents.a2a.codec_v1 import V1Codec

        codecs.update({"1.0": V1Codec(lenient=lenient), "0.3": V03Codec(lenient=lenient)})
    if key not in codecs:
        raise A2AVersionMismatchError(f"No codec for A2A {version}", {"requested": version,
                                                                     "supported": sorted(codecs)})
    return codecs[key]


# -- readers: each checks one field and names it in the error ------------------------
def invalid(loc: Loc, msg: str, kind: str = "value_error") -> ValidationError:
    return ValidationError.for_field(loc, msg, kind)


def as_object(value: Any, loc: Loc) -> Json:
    if not isinstance(value, dict):
        raise invalid(loc, "Input should be an object", "dict_type")
    return value


def required(d: Json, key: str, loc: Loc) -> Any:
    """JSON null counts as absent, here and in every reader."""
    if d.get(key) is None:
        raise invalid((*loc, key), "Field required", "missing")
    return d[key]


def opt_str(d: Json, key: str, loc: Loc) -> str | None:
    value = d.get(key)
    if value is not None and not isinstance(value, str):
        raise invalid((*loc, key), "Input should be a string", "string_type")
    return value


def req_str(d: Json, key: str, loc: Loc) -> str:
    required(d, key, loc)
    return opt_str(d, key, loc)  # type: ignore[return-value]


def opt_bool(d: Json, key: str, loc: Loc) -> bool | None:
    value = d.get(key)
    if value is not None and not isinstance(value, bool):
        raise invalid((*loc, key), "Input should be a boolean", "bool_type")
    return value


def opt_count(d: Json, key: str, loc: Loc) -> int | None:
    """A non-negative integer; ProtoJSON may send it as a string."""
    value = d.get(key)
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid((*loc, key), "Input should be an integer", "int_type")
    if value < 0:
        raise invalid((*loc, key), "Input should be greater than or equal to 0", "greater_than_equal")
    return value


def opt_list(d: Json, key: str, loc: Loc) -> list[Any]:
    value = d.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise invalid((*loc, key), "Input should be a list", "list_type")
    return value


def req_list(d: Json, key: str, loc: Loc) -> list[Any]:
    required(d, key, loc)
    return opt_list(d, key, loc)


def parts_list(d: Json, loc: Loc) -> list[Any]:
    """The ``parts`` of a message or an artifact, refused past ``MAX_PARTS`` before any
    is read."""
    parts = req_list(d, "parts", loc)
    if len(parts) > MAX_PARTS:
        raise invalid((*loc, "parts"), f"List should have at most {MAX_PARTS} items, not {len(parts)}", "too_long")
    return parts


def str_tuple(d: Json, key: str, loc: Loc) -> tuple[str, ...]:
    items = opt_list(d, key, loc)
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise invalid((*loc, key, i), "Input should be a string", "string_type")
    return tuple(items)


def metadata_in(d: Json, key: str, loc: Loc) -> dict[str, Any] | None:
    value = d.get(key)
    if value is None:
        return None
    return dict(as_object(value, (*loc, key))) or None


def timestamp_in(d: Json, key: str, loc: Loc) -> str | None:
    text = opt_str(d, key, loc)
    if text is None:
        return None
    try:
        # Python parses at most microseconds; ProtoJSON may send nanoseconds.
        moment = datetime.fromisoformat(re.sub(r"(\.\d{6})\d+", r"\1", text))
        return format_utc(moment if moment.tzinfo else moment.replace(tzinfo=UTC))
    except ValueError:
        raise invalid((*loc, key), "Input should be an ISO-8601 timestamp", "datetime_parsing") from None


def bytes_in(d: Json, key: str, loc: Loc) -> bytes:
    """Standard or URL-safe base64, padded or not (ProtoJSON accepts all four)."""
    text = req_str(d, key, loc).strip().replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except (binascii.Error, ValueError):
        raise invalid((*loc, key), "Input should be base64", "base64_decode") from None


def bytes_out(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def put(out: Json, key: str, value: Any) -> None:
    """Set an optional field; None and empty collections are not sent."""
    if value is None:
        return
    if type(value) is str:  # the usual value, first: this runs for every optional field encoded
        out[key] = value
    elif isinstance(value, tuple):
        if value:
            out[key] = list(value)
    elif not value and isinstance(value, dict | list):
        return
    else:
        out[key] = value


def _wire_token(value: str) -> str:
    return value.strip().lower().replace("_", "-")


_STATES = {state.value: state for state in TaskState} | {"cancelled": TaskState.CANCELED}
_ROLES = {role.value: role for role in Role}


# Each dialect's own spellings, looked up before any other is worked out.
_STATE_SPELLINGS = {spelling: state for state in TaskState
                    for spelling in (state.value, f"TASK_STATE_{state.name}")}
_ROLE_SPELLINGS = {spelling: role for role in Role for spelling in (role.value, f"ROLE_{role.name}")}


def parse_state(value: Any, loc: Loc) -> TaskState:
    """Any spelling: ``TASK_STATE_INPUT_REQUIRED``, ``input-required``, ``cancelled``."""
    if isinstance(value, str) and (state := _STATE_SPELLINGS.get(value)) is not None:
        return state
    token = _wire_token(value).removeprefix("task-state-") if isinstance(value, str) else None
    if token not in _STATES:
        raise invalid(loc, f"Unknown task state {value!r}", "enum")
    return _STATES[token]


def parse_role(value: Any, loc: Loc) -> Role:
    """``ROLE_USER`` or ``user``, in either dialect."""
    if isinstance(value, str) and (role := _ROLE_SPELLINGS.get(value)) is not None:
        return role
    token = _wire_token(value).removeprefix("role-") if isinstance(value, str) else None
    if token not in _ROLES:
        raise invalid(loc, f"Unknown role {value!r}: expected user or agent", "enum")
    return _ROLES[token]


def ends_stream(state: TaskState) -> bool:
    """Whether a status update in ``state`` is the last of its stream."""
    return state.terminal or state in INTERRUPTED_STATES

