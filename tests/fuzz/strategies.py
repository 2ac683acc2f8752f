"""Hypothesis strategies shared by the fuzz tests: arbitrary JSON, and params that
look enough like each method's to get past the first checks."""

from __future__ import annotations

import json
import os
from typing import Any

from hypothesis import strategies as st

from cleveragents.a2a import methods
from cleveragents.a2a import params as params_models

# CI runs the counts as written; CLEVERAGENTS_FUZZ_SCALE=20 runs twenty times as many cases.
SCALE = max(1, int(os.environ.get("CLEVERAGENTS_FUZZ_SCALE", "1")))
ULID = "01JEXAMPLE0000000000000000"
# A push URL that points nowhere but at this machine (port 9 is "discard").
LOOPBACK_URL = "http://127.0.0.1:9/hook"

scalars = (
    st.none() | st.booleans() | st.integers() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=24)
    | st.sampled_from(["", " ", ULID, "TASK_STATE_WORKING", "ROLE_USER", "user", "text", "file", "data",
                       "working", "canceled", "..", "../../etc/passwd", "/etc/passwd", "\x00", "\ud7ff", "-1",
                       "1e309", "2026-01-01T00:00:00Z", "not-a-date", "**/*", "local/default", "fs", "replace"])
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=24,
)

# Field names the wire uses anywhere, so generated objects hit real branches.
WIRE_KEYS = (
    "message", "messageId", "role", "parts", "text", "raw", "url", "data", "file", "bytes", "uri", "mimeType",
    "mediaType", "filename", "kind", "taskId", "contextId", "referenceTaskIds", "extensions", "metadata",
    "configuration", "blocking", "historyLength", "acceptedOutputModes", "pushNotificationConfig", "id",
    "token", "authentication", "scheme", "credentials", "status", "state", "timestamp", "artifacts",
    "artifactId", "name", "description", "pageSize", "pageToken", "a2aVersion", "workDoneToken",
)


def key_pool(spec: methods.MethodSpec) -> list[str]:
    model = getattr(params_models, spec.params)
    names = {field.alias or name for name, field in model.model_fields.items()} | set(model.model_fields)
    return sorted(names | set(spec.example) | set(WIRE_KEYS))


def _loopback(value: Any) -> Any:
    """The method's example, with any URL moved to loopback."""
    text = json.dumps(value).replace("https://example.invalid/hook", LOOPBACK_URL)
    return json.loads(text)


@st.composite
def mutated(draw: st.DrawFn, base: Any, keys: list[str], depth: int = 0) -> Any:
    """``base`` with some values replaced, some keys dropped and some added."""
    if depth > 3:
        return draw(st.just(base) | json_values)
    if isinstance(base, list):
        return [draw(mutated(item, keys, depth + 1)) for item in base]
    if not isinstance(base, dict):
        return draw(st.just(base) | json_values)
    out: dict[str, Any] = {}
    for key, value in base.items():
        choice = draw(st.integers(0, 3))
        if choice == 0:
            continue  # dropped
        out[key] = value if choice == 1 else (draw(mutated(value, keys, depth + 1)) if choice == 2 else draw(json_values))
    for key in draw(st.lists(st.sampled_from(keys), max_size=3)):
        out[key] = draw(json_values)
    return out


def params_for(spec: methods.MethodSpec) -> st.SearchStrategy[Any]:
    keys = key_pool(spec)
    anything = st.dictionaries(st.sampled_from(keys) | st.text(max_size=12), json_values, max_size=6)
    return anything | mutated(_loopback(spec.example), keys)


method_names = st.sampled_from(sorted(methods.METHODS))
method_and_params = method_names.flatmap(lambda name: st.tuples(st.just(name), params_for(methods.METHODS[name])))
