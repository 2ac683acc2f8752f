"""A task's stored JSON, put together from the encodings of its messages and artifacts.

A task is written several times while it is live, and each write used to encode it
whole, though most of it (the history, the artifacts) was written before. The
messages and artifacts are immutable, so their encodings are kept while their task
is live and only what a write adds (a status, a reply, an artifact) is encoded. The
text is the JSON of ``task.to_dict()``, keys in the same order, so every database,
older or newer, reads it the same.

The encoder is pydantic-core's, several times faster than the standard one. It
writes the same text, except that it keeps non-ASCII characters as they are where
``json.dumps`` escapes them; what it can't write (a lone surrogate) goes to ``json``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from json.encoder import encode_basestring_ascii
from typing import Any

import pydantic_core

from cleveragents.domain.task import Artifact, Message, Task

_KEPT_TASKS = 1024  # live tasks whose pieces are kept; the oldest are let go past it


def dumps(value: Any) -> str:
    try:
        return pydantic_core.to_json(value, inf_nan_mode="constants").decode()
    except Exception:
        return json.dumps(value, separators=(",", ":"))


def _pieces(items: Sequence[Message | Artifact], before: Sequence[Message | Artifact],
            texts: list[str]) -> list[str]:
    """The encoding of each item, reusing those of the very same objects ``before``."""
    return [texts[i] if i < len(before) and before[i] is item else dumps(item.to_dict())
            for i, item in enumerate(items)]


class TaskBodies:
    """Encodes tasks for one store; used from the store's thread only."""

    def __init__(self, kept: int = _KEPT_TASKS):
        self._kept = kept
        # task id -> (history, its encodings, artifacts, theirs), as last encoded
        self._live: dict[str, tuple[tuple[Message, ...], list[str], tuple[Artifact, ...], list[str]]] = {}

    def body(self, task: Task) -> str:
        old_history, history_texts, old_artifacts, artifact_texts = self._live.pop(task.id, ((), [], (), []))
        history = _pieces(task.history, old_history, history_texts)
        artifacts = _pieces(task.artifacts, old_artifacts, artifact_texts)
        if not task.terminal:  # a terminal task is seldom written again
            self._live[task.id] = (task.history, history, task.artifacts, artifacts)
            if len(self._live) > self._kept:
                del self._live[next(iter(self._live))]
        return "".join((
            '{"id":', encode_basestring_ascii(task.id), ',"context_id":', encode_basestring_ascii(task.context_id),
            ',"status":', dumps(task.status.to_dict()), ',"history":[', ",".join(history),
            '],"artifacts":[', ",".join(artifacts), '],"metadata":', dumps(task.metadata), "}"))
