"""The agent task: one model for both A2A dialects, and its state machine.

The protocol boundary's codecs (``a2a/codec_v1.py``, ``a2a/codec_v03.py``) translate
these types to and from the wire. ``to_dict``/``from_dict`` are the store's format:
plain JSON with bytes in base64, independent of either dialect.
"""

from __future__ import annotations

import base64
from dataclasses import field, replace
from enum import Enum
from typing import Any, NamedTuple

from cleveragents.domain.errors import BusinessRuleViolation, TaskNotCancelableError
from cleveragents.domain.records import record


class TaskState(str, Enum):
    SUBMITTED = "submitted"
    WORKING = "working"
    INPUT_REQUIRED = "input-required"
    AUTH_REQUIRED = "auth-required"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELED = "canceled"
    REJECTED = "rejected"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL_STATES

    @classmethod
    def parse(cls, value: str) -> TaskState:
        """Also accepts the older `cancelled` spelling."""
        return cls("canceled" if value == "cancelled" else value)


TERMINAL_STATES = frozenset({TaskState.COMPLETED, TaskState.FAILED, TaskState.CANCELED, TaskState.REJECTED})
INTERRUPTED_STATES = frozenset({TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED})
# The most parts a message or an artifact read from a peer (a client's message, a remote
# agent's answer) may hold. Each is decoded, stored and encoded again on the event loop:
# 300,000 one-letter parts held it for over a second.
MAX_PARTS = 10_000

_S = TaskState
TRANSITIONS: dict[TaskState, frozenset[TaskState]] = {
    _S.SUBMITTED: frozenset({_S.WORKING, _S.REJECTED, _S.CANCELED, _S.FAILED, _S.COMPLETED,
                             _S.INPUT_REQUIRED, _S.AUTH_REQUIRED}),
    # Rejected once working too: an agent may find only then that it won't do the task.
    _S.WORKING: frozenset({_S.WORKING, _S.INPUT_REQUIRED, _S.AUTH_REQUIRED, _S.COMPLETED,
                           _S.FAILED, _S.CANCELED, _S.REJECTED}),
    _S.INPUT_REQUIRED: frozenset({_S.WORKING, _S.CANCELED, _S.FAILED}),
    _S.AUTH_REQUIRED: frozenset({_S.WORKING, _S.CANCELED, _S.FAILED}),
    **{state: frozenset() for state in TaskState if state.terminal},
}


class Role(str, Enum):
    USER = "user"
    AGENT = "agent"


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _unb64(text: str | None) -> bytes | None:
    return None if text is None else base64.b64decode(text)


@record
class Part:
    """Exactly one of ``text``, ``raw`` (file bytes), ``url`` (file reference) or
    ``data`` (any JSON value) carries the content."""

    text: str | None = None
    raw: bytes | None = None
    url: str | None = None
    data: Any = None
    has_data: bool = False  # `data` may legitimately be JSON null
    media_type: str | None = None
    filename: str | None = None
    metadata: dict[str, Any] | None = None

    @property
    def kind(self) -> str:
        if self.text is not None:
            return "text"
        if self.raw is not None or self.url is not None:
            return "file"
        return "data"

    @classmethod
    def of_text(cls, text: str, **kw: Any) -> Part:
        return cls(text=text, **kw)

    @classmethod
    def of_data(cls, data: Any, **kw: Any) -> Part:
        return cls(data=data, has_data=True, **kw)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.text is not None:
            out["text"] = self.text
        if self.raw is not None:
            out["raw"] = _b64(self.raw)
        if self.url is not None:
            out["url"] = self.url
        if self.has_data:
            out["data"] = self.data
        for key in ("media_type", "filename", "metadata"):
            if (value := getattr(self, key)) is not None:
                out[key] = value
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Part:
        return cls(text=d.get("text"), raw=_unb64(d.get("raw")), url=d.get("url"),
                   data=d.get("data"), has_data="data" in d, media_type=d.get("media_type"),
                   filename=d.get("filename"), metadata=d.get("metadata"))


@record
class Message:
    message_id: str
    role: Role
    parts: tuple[Part, ...]
    context_id: str | None = None
    task_id: str | None = None
    metadata: dict[str, Any] | None = None
    extensions: tuple[str, ...] = ()
    reference_task_ids: tuple[str, ...] = ()

    def text(self) -> str:
        return "\n".join(p.text for p in self.parts if p.text is not None)

    def in_task(self, task_id: str, context_id: str) -> Message:
        """This message as part of a task (dataclasses.replace, without its cost)."""
        return Message(self.message_id, self.role, self.parts, context_id, task_id, self.metadata,
                       self.extensions, self.reference_task_ids)

    def to_dict(self) -> dict[str, Any]:
        return {
            "message_id": self.message_id, "role": self.role.value,
            "parts": [p.to_dict() for p in self.parts], "context_id": self.context_id,
            "task_id": self.task_id, "metadata": self.metadata,
            "extensions": list(self.extensions), "reference_task_ids": list(self.reference_task_ids),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Message:
        return cls(d["message_id"], Role(d["role"]), tuple(Part.from_dict(p) for p in d["parts"]),
                   d.get("context_id"), d.get("task_id"), d.get("metadata"),
                   tuple(d.get("extensions") or ()), tuple(d.get("reference_task_ids") or ()))


@record
class Artifact:
    artifact_id: str
    parts: tuple[Part, ...]
    name: str | None = None
    description: str | None = None
    metadata: dict[str, Any] | None = None
    extensions: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {"artifact_id": self.artifact_id, "parts": [p.to_dict() for p in self.parts],
                "name": self.name, "description": self.description, "metadata": self.metadata,
                "extensions": list(self.extensions)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Artifact:
        return cls(d["artifact_id"], tuple(Part.from_dict(p) for p in d["parts"]), d.get("name"),
                   d.get("description"), d.get("metadata"), tuple(d.get("extensions") or ()))


@record
class TaskStatus:
    state: TaskState
    timestamp: str | None = None
    message: Message | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"state": self.state.value, "timestamp": self.timestamp,
                "message": self.message.to_dict() if self.message else None}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TaskStatus:
        message = d.get("message")
        return cls(TaskState.parse(d["state"]), d.get("timestamp"),
                   Message.from_dict(message) if message else None)


@record
class Task:
    """Immutable: every change returns a new Task, so a snapshot handed to a stream
    never changes under it."""

    id: str
    context_id: str
    status: TaskStatus
    history: tuple[Message, ...] = ()
    artifacts: tuple[Artifact, ...] = ()
    metadata: dict[str, Any] | None = None

    @property
    def state(self) -> TaskState:
        return self.status.state

    @property
    def terminal(self) -> bool:
        return self.status.state.terminal

    def transition(self, state: TaskState, timestamp: str, message: Message | None = None) -> Task:
        """The task in ``state``; refuses what the lifecycle forbids."""
        self._check_transition(state)
        return self._with(status=TaskStatus(state, timestamp, message))

    def _check_transition(self, state: TaskState) -> None:
        if state not in TRANSITIONS[self.state]:
            if state is TaskState.CANCELED:
                raise TaskNotCancelableError(
                    f"Task not cancelable: already {self.state.value}",
                    {"task_id": self.id, "state": self.state.value},
                )
            raise BusinessRuleViolation(
                f"A {self.state.value} task can't become {state.value}",
                {"task_id": self.id, "state": self.state.value,
                 "allowed": sorted(s.value for s in TRANSITIONS[self.state])},
            )

    def _with(self, *, status: TaskStatus | None = None, history: tuple[Message, ...] | None = None,
              artifacts: tuple[Artifact, ...] | None = None) -> Task:
        # dataclasses.replace is several times slower, and a task changes a few times per turn.
        return Task(self.id, self.context_id, status or self.status,
                    self.history if history is None else history,
                    self.artifacts if artifacts is None else artifacts, self.metadata)

    def with_message(self, message: Message) -> Task:
        return self._with(history=(*self.history, message))

    def answered(self, reply: Message, state: TaskState, timestamp: str,
                 status_message: Message | None = None) -> Task:
        """``with_message(reply).transition(...)`` in one step: a turn's last change."""
        self._check_transition(state)
        return self._with(status=TaskStatus(state, timestamp, status_message), history=(*self.history, reply))

    def with_artifact(self, artifact: Artifact, append: bool = False) -> Task:
        """Add an artifact; with ``append``, extend the parts of the one with the same id."""
        artifacts = list(self.artifacts)
        for i, existing in enumerate(artifacts):
            if existing.artifact_id == artifact.artifact_id:
                parts = (*existing.parts, *artifact.parts) if append else artifact.parts
                artifacts[i] = replace(artifact, parts=parts)
                break
        else:
            artifacts.append(artifact)
        return self._with(artifacts=tuple(artifacts))

    def trimmed(self, history_length: int | None, include_artifacts: bool = True) -> Task:
        """A view for a response: the last ``history_length`` messages (all when None)."""
        history = self.history
        if history_length is not None:
            history = history[max(0, len(history) - history_length):] if history_length else ()
        if history is self.history and (include_artifacts or not self.artifacts):
            return self  # immutable: the whole task is its own view
        return self._with(history=history, artifacts=self.artifacts if include_artifacts else ())

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "context_id": self.context_id, "status": self.status.to_dict(),
                "history": [m.to_dict() for m in self.history],
                "artifacts": [a.to_dict() for a in self.artifacts], "metadata": self.metadata}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Task:
        return cls(d["id"], d["context_id"], TaskStatus.from_dict(d["status"]),
                   tuple(Message.from_dict(m) for m in d.get("history") or ()),
                   tuple(Artifact.from_dict(a) for a in d.get("artifacts") or ()), d.get("metadata"))


@record
class TaskStatusUpdate:
    task_id: str
    context_id: str
    status: TaskStatus
    final: bool = False
    metadata: dict[str, Any] | None = None


@record
class TaskArtifactUpdate:
    task_id: str
    context_id: str
    artifact: Artifact
    append: bool = False
    last_chunk: bool = False
    metadata: dict[str, Any] | None = None


# What a stream yields, in order: the task (or a direct message), then updates.
StreamItem = Task | Message | TaskStatusUpdate | TaskArtifactUpdate


class StreamEvent(NamedTuple):
    """A stream item with its event id (a ULID), by which a subscriber resumes."""

    event_id: str
    item: StreamItem


@record
class PushConfig:
    """A webhook that receives a task's stream items."""

    id: str
    task_id: str
    url: str
    token: str | None = None
    authentication: dict[str, Any] | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "task_id": self.task_id, "url": self.url, "token": self.token,
                "authentication": self.authentication, "metadata": self.metadata}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PushConfig:
        return cls(d["id"], d["task_id"], d["url"], d.get("token"), d.get("authentication"),
                   d.get("metadata") or {})
