"""The parts and artifacts a published agent answers with: ``TextPart``, ``FilePart``,
``DataPart`` and ``Artifact``.

Each is the task model's own ``Part`` or ``Artifact`` (a subclass that only adds a
constructor an author writes by hand), so what a handler returns is what the codecs
send, in either A2A dialect, with nothing to convert. The constructors check their
input, so a mistake shows where it is made rather than as a broken reply.
Parts that come back (from the outbound client, or a task's history) are plain
``Part``s: read ``kind`` (``text``, ``file`` or ``data``), then ``text``; ``raw``
or ``url`` with ``filename`` and ``media_type``; or ``data``.
"""

from __future__ import annotations

import json
import mimetypes
from collections.abc import Iterable, Mapping
from typing import Any

import pydantic_core

from cleveragents.domain import task
from cleveragents.domain.task import Part
from cleveragents.ids import new_id


def json_value(value: Any, what: str) -> Any:
    """``value`` as plain JSON (tuples as lists, dataclasses, pydantic models and dates
    converted); a TypeError that names ``what`` if it can't be, or holds NaN or infinity."""
    try:
        converted = pydantic_core.to_jsonable_python(value)
        json.dumps(converted, allow_nan=False)
    except (pydantic_core.PydanticSerializationError, ValueError, TypeError) as exc:
        raise TypeError(f"{what} must be JSON (objects, arrays, strings, finite numbers, booleans, null): "
                        f"{exc}") from None
    return converted


def _metadata(metadata: Mapping[str, Any] | None, what: str) -> dict[str, Any] | None:
    if metadata is None:
        return None
    if not isinstance(metadata, Mapping):
        raise TypeError(f"{what} metadata must be a mapping, not {type(metadata).__name__}")
    if wrong := [key for key in metadata if not isinstance(key, str)]:
        raise TypeError(f"{what} metadata keys must be strings, not {wrong[0]!r}")
    converted: dict[str, Any] = json_value(dict(metadata), f"{what} metadata")
    return converted


def _optional_str(value: Any, what: str) -> str | None:
    if value is not None and (not isinstance(value, str) or not value):
        raise TypeError(f"{what} must be a non-empty string, not {value!r}")
    return value


class TextPart(Part):
    """Text, with optional metadata."""

    __slots__ = ()

    def __init__(self, text: str, *, metadata: Mapping[str, Any] | None = None) -> None:
        if not isinstance(text, str):
            raise TypeError(f"TextPart text must be a string, not {type(text).__name__}")
        super().__init__(text=text, metadata=_metadata(metadata, "TextPart"))

    def __repr__(self) -> str:
        return f"TextPart({self.text!r}" + (f", metadata={self.metadata!r})" if self.metadata else ")")


class FilePart(Part):
    """A file: its bytes (``file_bytes``) or where to fetch it (``file_uri``), exactly
    one of them; with a file name (``name``) and a media type (``mime_type``: when not
    given, guessed from the name's extension)."""

    __slots__ = ()

    def __init__(self, *, file_uri: str | None = None, file_bytes: bytes | bytearray | memoryview | None = None,
                 name: str | None = None, mime_type: str | None = None,
                 metadata: Mapping[str, Any] | None = None) -> None:
        if (file_uri is None) == (file_bytes is None):
            raise TypeError("FilePart takes exactly one of file_uri (where the file is) or file_bytes (its content)")
        if file_bytes is not None and not isinstance(file_bytes, bytes | bytearray | memoryview):
            raise TypeError(f"FilePart file_bytes must be bytes, not {type(file_bytes).__name__}")
        _optional_str(file_uri, "FilePart file_uri")
        _optional_str(name, "FilePart name")
        _optional_str(mime_type, "FilePart mime_type")
        if mime_type is None and name is not None:
            mime_type = mimetypes.guess_type(name, strict=False)[0]
        super().__init__(raw=None if file_bytes is None else bytes(file_bytes), url=file_uri, media_type=mime_type,
                         filename=name, metadata=_metadata(metadata, "FilePart"))

    def __repr__(self) -> str:
        content = f"file_uri={self.url!r}" if self.url is not None else f"file_bytes=<{len(self.raw or b'')} bytes>"
        extra = "".join(f", {key}={value!r}" for key, value in
                        (("name", self.filename), ("mime_type", self.media_type), ("metadata", self.metadata))
                        if value)
        return f"FilePart({content}{extra})"


class DataPart(Part):
    """Structured data: any JSON value (an object is what most clients expect), with
    optional metadata. Tuples, dataclasses, pydantic models and dates are converted
    to JSON as the part is made."""

    __slots__ = ()

    def __init__(self, data: Any, *, metadata: Mapping[str, Any] | None = None) -> None:
        super().__init__(data=json_value(data, "DataPart data"), has_data=True,
                         metadata=_metadata(metadata, "DataPart"))

    def __repr__(self) -> str:
        return f"DataPart({self.data!r}" + (f", metadata={self.metadata!r})" if self.metadata else ")")


class Artifact(task.Artifact):
    """An output of the task: one or more parts (a string is a ``TextPart``), with a
    name and a description for people, an id (made when not given; unique within the
    task) and metadata."""

    __slots__ = ()

    def __init__(self, parts: Iterable[Part | str], name: str | None = None, description: str | None = None, *,
                 artifact_id: str | None = None, metadata: Mapping[str, Any] | None = None,
                 extensions: Iterable[str] = ()) -> None:
        if isinstance(parts, str | Part):
            raise TypeError("Artifact parts must be a list of parts (wrap a single one in [...])")
        made = tuple(TextPart(p) if isinstance(p, str) else p for p in parts)
        if not made:
            raise TypeError("an Artifact needs at least one part")
        if wrong := [type(p).__name__ for p in made if not isinstance(p, Part)]:
            raise TypeError(f"Artifact parts are TextPart, FilePart, DataPart or str, not {', '.join(wrong)}")
        for key, value in (("artifact_id", artifact_id), ("name", name), ("description", description)):
            _optional_str(value, f"Artifact {key}")
        uris = tuple(extensions)
        if not all(isinstance(uri, str) and uri for uri in uris):
            raise TypeError("Artifact extensions must be extension URIs (strings)")
        super().__init__(artifact_id or new_id(), made, name, description, _metadata(metadata, "Artifact"), uris)

