"""The JSON-RPC 2.0 envelope models of the A2A boundary."""

from __future__ import annotations

import json
import warnings
from datetime import datetime
from typing import Any, Literal

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_serializer, model_validator
from pydantic_core import PydanticSerializationError

from cleveragents.ids import format_utc, new_id, utc_now

JsonRpcId = str | int | None


def _rename_legacy(values: Any, renames: dict[str, str], model: str) -> Any:
    """Accept pre-3.7 field names, warning once per use."""
    if not isinstance(values, dict):
        return values
    legacy = [old for old in renames if old in values]
    if not legacy:
        return values
    values = dict(values)
    for old in legacy:
        new = renames[old]
        warnings.warn(
            f"{model}.{old} is deprecated; use {model}.{new}",
            DeprecationWarning,
            stacklevel=4,
        )
        value = values.pop(old)
        values.setdefault(new, value)
    return values


class A2AErrorDetail(BaseModel):
    """The ``error`` member of a JSON-RPC response. ``data`` is ``{}`` when there is
    none (and then left off the wire); the A2A 1.0 dialect's is a list of error
    details (``google.rpc.ErrorInfo``, ...)."""

    model_config = ConfigDict(extra="forbid")

    code: int
    message: str
    data: dict[str, Any] | list[Any] = Field(default_factory=dict)

    @field_validator("data", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return {} if value is None else value

    @model_serializer(mode="wrap")
    def _omit_empty_data(self, handler: Any) -> dict[str, Any]:
        out: dict[str, Any] = handler(self)
        if not out.get("data"):
            out.pop("data", None)
        return out


class A2ARequest(BaseModel):
    """A JSON-RPC request. ``id`` is a new ULID when it is omitted or empty."""

    model_config = ConfigDict(extra="forbid")

    jsonrpc: Literal["2.0"] = "2.0"
    id: JsonRpcId = Field(default="", validate_default=True)
    method: str
    params: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _legacy_names(cls, values: Any) -> Any:
        return _rename_legacy(
            values,
            {"a2a_version": "jsonrpc", "request_id": "id", "operation": "method", "payload": "params"},
            "A2ARequest",
        )

    @field_validator("id", mode="before")
    @classmethod
    def _generate_id(cls, value: Any) -> Any:
        if value is None or value == "":
            return new_id()
        if isinstance(value, bool):
            raise ValueError("id must be a string or an integer")
        return value

    @field_validator("method")
    @classmethod
    def _method_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("method must not be blank")
        return value


_new, _set = object.__new__, object.__setattr__


class A2AResponse(BaseModel):
    """A JSON-RPC response: exactly one of ``result`` and ``error`` is present."""

    model_config = ConfigDict(extra="forbid")

    jsonrpc: Literal["2.0"] = "2.0"
    id: JsonRpcId = None
    result: Any = None
    error: A2AErrorDetail | None = None
    _encoded: bytes | None = PrivateAttr(default=None)

    @model_validator(mode="before")
    @classmethod
    def _legacy_names(cls, values: Any) -> Any:
        return _rename_legacy(
            values,
            {"a2a_version": "jsonrpc", "request_id": "id", "data": "result", "error_detail": "error"},
            "A2AResponse",
        )

    @classmethod
    def of_result(cls, msg_id: JsonRpcId, result: Any) -> A2AResponse:
        """The answer ``result`` to a request whose id was read already: built without
        the validators, which would only check what is known (a few microseconds of
        every call). ``model_construct`` costs about 5 us more; this sets the same
        state pydantic keeps (``tests/unit/test_models.py`` compares the two)."""
        response = _new(cls)
        _set(response, "__dict__", {"jsonrpc": "2.0", "id": msg_id, "result": result, "error": None})
        _set(response, "__pydantic_fields_set__", {"id", "result"})
        _set(response, "__pydantic_extra__", None)
        _set(response, "__pydantic_private__", {"_encoded": None})
        return response

    @model_validator(mode="after")
    def _result_xor_error(self) -> A2AResponse:
        has_result = "result" in self.model_fields_set
        has_error = self.error is not None
        if has_result == has_error:
            raise ValueError("exactly one of result and error must be set")
        return self

    @property
    def ok(self) -> bool:
        return self.error is None

    @model_serializer(mode="wrap")
    def _one_of_result_error(self, handler: Any) -> dict[str, Any]:
        out: dict[str, Any] = handler(self)
        out.pop("result" if self.error is not None else "error", None)
        return out

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def to_json(self) -> str:
        """The wire form as JSON text (see ``json_bytes``)."""
        return self.json_bytes().decode("utf-8")

    def keep_encoded(self, data: bytes) -> None:
        """Keep ``json_bytes()``'s answer, worked out earlier (off the event loop)."""
        self._encoded = data

    def json_bytes_in_pieces(self) -> bytes:
        """``json_bytes()``, the result encoded a piece at a time (``bulk_json``), so a
        worker thread encoding megabytes lets the event loop's run between pieces."""
        from cleveragents.a2a import bulk_json

        if self.error is None:
            try:
                head = pydantic_core.to_json({"jsonrpc": self.jsonrpc, "id": self.id, "result": None})
                return head[:-len(b"null}")] + bulk_json.encode(self.result) + b"}"
            except (PydanticSerializationError, UnicodeEncodeError):
                pass
        return self.json_bytes()

    def json_bytes(self) -> bytes:
        """The wire form as UTF-8 JSON, in one pass of pydantic's serializer: what
        transports write. Text it can't encode (a lone surrogate from a file read)
        goes through ``json``, escaped."""
        if self._encoded is not None:
            return self._encoded
        try:
            if self.error is not None:
                return self.model_dump_json().encode("utf-8")
            # A plain dict skips the model serializer's wrap step (most of the cost).
            wire = {"jsonrpc": self.jsonrpc, "id": self.id, "result": self.result}
            return pydantic_core.to_json(wire, inf_nan_mode="null")
        except (PydanticSerializationError, UnicodeEncodeError):
            return json.dumps(self.to_wire()).encode("ascii")


class A2AEvent(BaseModel):
    """One event on the event queue; ``event_id`` is its resume cursor."""

    model_config = ConfigDict(extra="forbid")

    event_id: str = Field(default_factory=new_id)
    event_type: str
    plan_id: str | None = None
    data: dict[str, Any] = Field(default_factory=dict)
    timestamp: str = Field(default_factory=utc_now)

    @model_validator(mode="before")
    @classmethod
    def _legacy_names(cls, values: Any) -> Any:
        return _rename_legacy(values, {"type": "event_type", "payload": "data"}, "A2AEvent")

    @field_validator("event_type")
    @classmethod
    def _type_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("event_type must not be blank")
        return value

    @field_validator("timestamp", mode="before")
    @classmethod
    def _utc_timestamp(cls, value: Any) -> str:
        if isinstance(value, datetime):
            moment = value
        elif isinstance(value, str):
            try:
                moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
            except ValueError as exc:
                raise ValueError("timestamp must be ISO-8601") from exc
        else:
            raise ValueError("timestamp must be ISO-8601")
        if moment.tzinfo is None:
            raise ValueError("timestamp must carry a UTC offset")
        return format_utc(moment)

    # Read-only spellings used by older callers (`event.type`, `event.payload`).
    @property
    def type(self) -> str:
        return self.event_type

    @property
    def payload(self) -> dict[str, Any]:
        return self.data

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

# The earlier spelling of the prefix, kept so existing imports keep working.
A2aRequest = A2ARequest
A2aResponse = A2AResponse
A2aErrorDetail = A2AErrorDetail
A2aEvent = A2AEvent
