#!/usr/bin/env python
"""Generate ``docs/protocol.md`` from the method table.

    python scripts/gen_protocol_docs.py           # write docs/protocol.md
    python scripts/gen_protocol_docs.py --check   # exit 1 if the file is out of date

Everything method-specific (names, params, results, errors, examples) comes from
``cleveragents.a2a.methods.METHODS``, the params models, the error tables in
``cleveragents.a2a.errors`` and the service keys a ``Container`` configures. The
output depends on nothing else, so it is the same on every run.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DOC_PATH = ROOT / "docs" / "protocol.md"

try:  # the package is normally installed; fall back to the source tree
    import cleveragents  # noqa: F401
except ImportError:  # pragma: no cover
    sys.path.insert(0, str(ROOT / "server"))

from cleveragents.a2a import dialects, errors, methods  # noqa: E402
from cleveragents.a2a import params as params_models  # noqa: E402
from cleveragents.a2a.capabilities import NOTIFICATIONS  # noqa: E402
from cleveragents.a2a.methods import MethodSpec  # noqa: E402
from cleveragents.a2a.version import SUPPORTED_VERSIONS  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from protocol_sections import (  # noqa: E402
    card_section,
    events_section,
    limits_section,
    plan_section,
    task_section,
)

# Families, in the order they appear. Extension methods are sorted into them by name.
STANDARD_FAMILY = "Standard A2A"
LEGACY_FAMILY = "Deprecated aliases"
OTHER_FAMILY = "Other extension methods"
FAMILIES: list[tuple[str, tuple[str, ...]]] = [
    ("Sessions", ("session.",)),
    ("Plans", ("_cleveragents/plan/",)),
    ("Registries", ("_cleveragents/registry/",)),
    ("Context", ("_cleveragents/context/",)),
    ("Health & diagnostics", ("_cleveragents/health/", "_cleveragents/diagnostics/")),
    ("Sync & namespaces", ("_cleveragents/sync/", "_cleveragents/namespace/")),
    ("Events", ("_cleveragents/event/",)),
]

NOTIFICATION_TEXT = {
    "_cleveragents/event": "the raw `A2AEvent` of a live `_cleveragents/event/subscribe` "
    "subscription: `event_id`, `event_type`, `plan_id`, `data`, `timestamp`, plus "
    "`subscription_id`.",
    "task/statusUpdate": "a stream item of a task (with `requestId` and `eventId`, see Streams), or a plan "
    "status change for a subscriber (plan events carry `planId`, `phase` and `state`).",
    "task/artifactUpdate": "an artifact update of a task's stream (with `requestId` and `eventId`), or a new "
    "plan artifact for a subscriber.",
    "$/progress": "LSP work-done progress for plan execution, sent when the request "
    "carried a `workDoneToken`.",
}

# Example requests longer than this are pretty-printed.
EXAMPLE_WIDTH = 120

JSONRPC_CODES = [
    (errors.PARSE_ERROR, "Parse error", "The message is not valid JSON (RFC 8259: `NaN`, `Infinity`, a number "
     "out of range, a lone UTF-16 surrogate and a name given twice in one object are refused too), or its "
     "frame could not be read (stdio). The response has `id: null`."),
    (errors.INVALID_REQUEST, "Invalid request", "The JSON-RPC envelope is wrong (missing `method`, "
     "`params` that is not an object, ...)."),
    (errors.METHOD_NOT_FOUND, "Method not found", "No method of that name; `data` names the method."),
    (errors.INVALID_PARAMS, "Invalid params", "The params failed validation; `data` holds pydantic's "
     "error locations (1.0: a `google.rpc.BadRequest` with `fieldViolations`)."),
    (errors.INTERNAL_ERROR, "Internal error", "A bug in the server. The error carries only an "
     "`error_id` (1.0: in the ErrorInfo `metadata`); the same id is logged with the traceback "
     "on the server's stderr."),
]


# --- inputs ---------------------------------------------------------------------------
def configured_services() -> set[str]:
    """What a default in-memory Container serves, as `service_key.call` names (no
    database is opened)."""
    from cleveragents.a2a.facade import A2ALocalFacade
    from cleveragents.config import Settings
    from cleveragents.container import Container

    container = Container(Settings(memory=True))
    try:
        services = A2ALocalFacade(container).services
        return {f"{spec.service}.{spec.call}" for spec in methods.METHODS.values()
                if hasattr(services.get(spec.service), spec.call)}
    finally:
        container.close()


def family_of(spec: MethodSpec) -> str:
    if spec.dialect in dialects.STANDARD:
        return STANDARD_FAMILY
    if spec.dialect == dialects.LEGACY:
        return LEGACY_FAMILY
    for family, prefixes in FAMILIES:
        if spec.name.startswith(prefixes):
            return family
    return OTHER_FAMILY


def standard_groups(specs: Iterable[MethodSpec]) -> list[tuple[MethodSpec, list[MethodSpec]]]:
    """Each 1.0 method with the 0.3 names that serve the same operation."""
    specs = list(specs)
    groups: list[tuple[MethodSpec, list[MethodSpec]]] = []
    by_op: dict[tuple[str, str], int] = {}
    for spec in specs:
        if spec.dialect == dialects.A2A_V1:
            by_op[(spec.service, spec.call)] = len(groups)
            groups.append((spec, []))
    for spec in specs:
        if spec.dialect == dialects.A2A_V03:
            index = by_op.get((spec.service, spec.call))
            if index is None:
                raise SystemExit(f"{spec.name}: no 1.0 method serves {spec.service}.{spec.call}")
            groups[index][1].append(spec)
    return groups


# --- helpers --------------------------------------------------------------------------
def _code(name: str) -> str:
    return f"`{name}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=False)


def _error_class(name: str) -> type[Exception]:
    cls = getattr(errors, name, None)
    if not (isinstance(cls, type) and issubclass(cls, Exception)):
        raise SystemExit(f"unknown error class in the method table: {name}")
    return cls


def _lookup(table: Mapping[type[Exception], Any], cls: type[Exception]) -> Any:
    for klass in cls.__mro__:
        if klass in table:
            return table[klass]
    return None


def _meaning(cls: type[Exception]) -> str:
    doc = cls.__dict__.get("__doc__")
    if doc:
        return doc.strip().splitlines()[0].rstrip(".") + "."
    return str(getattr(cls, "default_message", cls.__name__)) + "."


def _standard_table(dialect: str) -> bool:
    return dialect in dialects.STANDARD


def error_code_text(name: str, dialect: str) -> str:
    cls = _error_class(name)
    if _standard_table(dialect):
        entry = _lookup(errors.A2A_ERROR_CODES, cls)
        code, reason = entry if entry else (errors.INTERNAL_ERROR, "INTERNAL")
        return f"{code} (`{reason}`)"
    code = _lookup(errors.EXTENSION_ERROR_CODES, cls)
    return str(code if code is not None else errors.INTERNAL_ERROR)


def not_available_code(dialect: str) -> int:
    if _standard_table(dialect):
        return errors.A2A_ERROR_CODES[errors.A2ANotAvailableError][0]
    return errors.EXTENSION_ERROR_CODES[errors.A2ANotAvailableError]


def version_code(standard: bool) -> int:
    if standard:
        return errors.A2A_ERROR_CODES[errors.A2AVersionMismatchError][0]
    return errors.EXTENSION_ERROR_CODES[errors.A2AVersionMismatchError]


# --- params tables --------------------------------------------------------------------
def _resolve(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return root.get("$defs", {}).get(ref.rsplit("/", 1)[1], schema)
    return schema


def _type(schema: Mapping[str, Any], root: Mapping[str, Any]) -> str:
    if "anyOf" in schema:
        parts: list[str] = []
        for sub in schema["anyOf"]:
            text = _type(sub, root)
            if text not in parts:
                parts.append(text)
        return " | ".join(parts)
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[1]
    kind = schema.get("type")
    if kind == "array":
        items = schema.get("items")
        return f"array of {_type(items, root)}" if items else "array"
    if kind is None:
        return "enum" if "enum" in schema else "any"
    return str(kind)


def _constraints(schema: Mapping[str, Any], root: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for sub in schema.get("anyOf", ()):
        if sub.get("type") != "null":
            out.extend(_constraints(_resolve(sub, root), root))
    if "enum" in schema:
        out.append("one of " + ", ".join(_code(_json(v)) for v in schema["enum"]))
    if "const" in schema:
        out.append("exactly " + _code(_json(schema["const"])))
    for key, label in (("minLength", "min length"), ("maxLength", "max length"),
                       ("minimum", "min"), ("exclusiveMinimum", "greater than"),
                       ("maximum", "max"), ("exclusiveMaximum", "less than"),
                       ("minItems", "min items"), ("maxItems", "max items")):
        if key in schema:
            out.append(f"{label} {schema[key]}")
    if "pattern" in schema:
        out.append(f"pattern `{schema['pattern']}`")
    items = schema.get("items")
    if isinstance(items, Mapping):
        out.extend(f"items: {c}" for c in _constraints(_resolve(items, root), root))
    return out


def params_section(model_name: str) -> list[str]:
    model = getattr(params_models, model_name, None)
    if model is None:
        raise SystemExit(f"unknown params model in the method table: {model_name}")
    schema = model.model_json_schema()
    strict = schema.get("additionalProperties") is False
    extras = ("unknown keys are rejected with -32602" if strict
              else "other keys are allowed and passed on")
    properties: Mapping[str, Any] = schema.get("properties", {})
    if not properties:
        if strict:
            return [f"Params (`{model_name}`): none; send `{{}}` ({extras})."]
        return [f"Params (`{model_name}`): no fields are checked here; {extras}."]
    required = set(schema.get("required", ()))
    lines = [f"Params (`{model_name}`; {extras}):", "",
             "| field | type | required | default / constraints | description |",
             "|---|---|---|---|---|"]
    for name, prop in properties.items():
        notes: list[str] = []
        if name not in required:
            if "default" in prop:
                default = prop["default"]
            else:
                default = model.model_fields[name].get_default(call_default_factory=True)
            notes.append(f"default `{_json(default)}`")
        notes.extend(_constraints(prop, schema))
        row = [_code(name), _type(prop, schema), "yes" if name in required else "no",
               "; ".join(notes) or "—", prop.get("description", "") or "—"]
        lines.append("| " + " | ".join(_cell(c) for c in row) + " |")
    return lines


# --- method sections ------------------------------------------------------------------
def _status(spec: MethodSpec, services: set[str]) -> str:
    if f"{spec.service}.{spec.call}" in services:
        return f"served (`{spec.service}.{spec.call}`)"
    return (f"not served yet in this build — answers {not_available_code(spec.dialect)} "
            f"naming `{spec.service}` (`data: {{\"method\", \"service\"}}`)")


def _result(text: str) -> str:
    if not text:
        return "—"
    return f"`{text}`" if text.startswith("{") else text


def _errors(spec: MethodSpec) -> list[str]:
    if not spec.errors:
        return ["Errors: none specific to this method (see [Error codes](#error-codes))."]
    table = "A2A table" if _standard_table(spec.dialect) else "extension table"
    lines = [f"Errors ({table}):", ""]
    lines += [f"- `{name}`: {error_code_text(name, spec.dialect)}" for name in spec.errors]
    return lines


def _example(spec: MethodSpec) -> list[str]:
    request = {"jsonrpc": "2.0", "id": 1, "method": spec.name, "params": spec.example}
    text = json.dumps(request, ensure_ascii=False)
    if len(text) > EXAMPLE_WIDTH:
        text = json.dumps(request, indent=2, ensure_ascii=False)
    return ["Example request:", "", "```json", text, "```"]


def method_section(spec: MethodSpec, services: set[str], aliases: list[MethodSpec] | None = None) -> list[str]:
    aliases = aliases or []
    names = [spec, *aliases]
    heading = " / ".join(_code(s.name) for s in names)
    lines = [f"### {heading}", "", spec.summary, ""]
    if spec.replaced_by:
        lines += [f"**Deprecated.** Replaced by `{spec.replaced_by}`, which takes the same params. "
                  "The server logs a warning the first time an alias is called.", ""]
    if aliases:
        by_dialect: dict[str, list[str]] = {}
        for s in names:
            by_dialect.setdefault(s.dialect, []).append(_code(s.name))
        dialect_text = ", ".join(f"`{d}` ({', '.join(n)})" for d, n in by_dialect.items())
    else:
        dialect_text = f"`{spec.dialect}`"
    lines += [f"- Dialect: {dialect_text}",
              f"- Status: {_status(spec, services)}",
              f"- Result: {_result(spec.result)}"]
    if spec.streaming:
        lines.append("- Streaming: yes (the answer is a stream of items, not a single result)")
    lines.append("")
    lines += params_section(spec.params)
    lines.append("")
    lines += _errors(spec)
    lines.append("")
    lines += _example(spec)
    lines.append("")
    return lines


# --- fixed sections -------------------------------------------------------------------
def intro() -> list[str]:
    versions = ", ".join(f"`{v}`" for v in SUPPORTED_VERSIONS)
    return [
        "# CleverAgents protocol",
        "",
        "<!-- Generated by scripts/gen_protocol_docs.py from the method table "
        "(server/cleveragents/a2a/methods.py). Do not edit by hand; run the script. -->",
        "",
        "Every method the backend answers, with its params, result, errors and an example, "
        "generated from the method table, the params models and the error tables.",
        "",
        "## Transport",
        "",
        "- The backend speaks JSON-RPC 2.0 over stdio with LSP framing: each message is "
        "`Content-Length: N`, a blank line (`\\r\\n\\r\\n`), then N bytes of UTF-8 JSON. A frame "
        "that can't be read is answered with `id: null` (-32700, or -32600 over the size limit) and the "
        "reader goes on at the next `Content-Length` header; two different `Content-Length` values in one "
        "frame are refused (the same one twice is accepted). `docs/architecture.md` gives the rule.",
        "- The client sends the LSP `initialize` request first. Its result declares the A2A "
        "support in `capabilities.experimental.a2a`: supported versions, the agent card, the "
        "method names per dialect (only the methods this build serves) and the notifications. Before it, "
        "a request is answered -32002 (`data.reason: not_initialized`) and a notification other than `exit` is dropped; a second "
        "`initialize` is -32600 (`already_initialized`).",
        "- Every method below is a custom request. `params` is a JSON object (`\"params\": null` and "
        "an empty array, `[]`, which is what Neovim's Lua sends for `{}`, are taken as no params; any "
        "other array is refused with -32602) and the result is a JSON object.",
        "- Three keys in `params` belong to the transport and are removed before validation: "
        "`A2A-Version` (a string), `A2A-Extensions` (see A2A extensions below) and `workDoneToken` "
        "(LSP's ProgressToken: a string or a 32-bit integer; anything else is -32602 with the "
        "location `workDoneToken`).",
        "- The same methods are served over HTTP (`docs/http.md`: JSON-RPC, and the A2A HTTP+JSON "
        "binding for the standard ones), and with the `grpc` extra the A2A 1.0 methods also over gRPC "
        "(`docs/grpc.md`: each RPC of `lf.a2a.v1.A2AService` is the 1.0 method of the same name, and an "
        "error is a gRPC status carrying the same ErrorInfo).",
        "",
        "## Dialects and versions",
        "",
        "- The method name selects the dialect. Standard A2A methods exist in two dialects: "
        "A2A 1.0 (`SendMessage`, `GetTask`, ...; ProtoJSON shapes, `TASK_STATE_*` and `ROLE_*` "
        "enums) and A2A 0.3 (`message/send`, `tasks/get`, ...; `kind`-tagged objects, lower-case "
        "states). Both reach the same services.",
        "- A 1.0 request may name each field as ProtoJSON allows: by its JSON name (`taskId`, "
        "`historyLength`) or its proto name (`task_id`, `history_length`), at every level of the "
        "request's messages; keys inside free-form values (`metadata`, a data part's `data`) are "
        "left as sent. A field given under both names with two values is -32602. Answers always use "
        "the JSON names.",
        "- CleverAgents' own methods are `_cleveragents/*` and `session.*` (dialect "
        "`cleveragents`). The old dotted names (dialect `legacy`) still work as deprecated aliases.",
        f"- A client may name an A2A version ({versions}; `Major.Minor`, the patch is ignored) "
        "once in `initialize` as `initializationOptions.a2aVersion`, or per request as "
        "`params[\"A2A-Version\"]`. An unsupported version, or a value that is not a string (`1.0`, "
        f"`true`), is refused with {version_code(True)} on standard methods and {version_code(False)} on "
        "extension methods, with the value as sent in `data.requested`.",
        "",
        "## A2A extensions",
        "",
        "- The agent card lists the agent's extensions in `capabilities.extensions` (ours, "
        "`urn:cleveragents:extensions:v1`, is never required; a published agent may declare more, "
        "see `docs/http.md`).",
        "- A client activates extensions for the whole connection in `initialize`, as "
        "`initializationOptions.a2aExtensions` (a list of URIs, or one string of comma-separated "
        "URIs), or for one request as `params[\"A2A-Extensions\"]` (the same forms), which then "
        "replaces the connection's list for that request. The `initialize` answer echoes the "
        "activated URIs the agent supports in `capabilities.experimental.a2a.activeExtensions`. A "
        "value of another type is -32602 (in `initialize`, the `initialize` is refused and may be "
        "sent again).",
        "- A standard A2A request (either dialect) that does not activate every extension the card "
        "marks `required` is refused with -32008 (`EXTENSION_SUPPORT_REQUIRED`), its message naming "
        "the missing URIs and its data holding `method` and `missing` (the list of URIs; in the 1.0 "
        "dialect, as JSON text in the ErrorInfo's metadata). A2A 0.3 has no code of its own for it: "
        "0.3 methods answer -32008 too. `GetExtendedAgentCard` (and its 0.3 names) and the "
        "`_cleveragents/*`, `session.*` and legacy methods are never refused for it.",
        "",
        "## Notifications",
        "",
        "Server-to-client notifications:",
        "",
        *[f"- `{name}`: {NOTIFICATION_TEXT[name]}" for name in NOTIFICATIONS],
        "",
    ]


def error_sections() -> list[str]:
    lines = [
        "## Error codes",
        "",
        "An error's code depends on the dialect of the method that raised it: standard A2A "
        "methods use the A2A specification's table, `_cleveragents/*`, `session.*` and legacy "
        "methods use the extension table. Any method answers "
        f"{not_available_code(dialects.EXTENSION)} (`data: {{\"method\", \"service\"}}`) when the "
        "service that serves it is not configured, and -32602 when its params are invalid.",
        "",
        "### JSON-RPC codes (every dialect)",
        "",
        "| code | name | when |",
        "|---|---|---|",
        *[f"| {code} | {name} | {_cell(text)} |" for code, name, text in JSONRPC_CODES],
        "",
        "### Standard A2A methods",
        "",
        "In the 1.0 dialect `error.data` is an array whose first item is a "
        "`google.rpc.ErrorInfo` object: `{\"@type\": \"" + errors.ERROR_INFO_TYPE + "\", "
        "\"reason\": ..., \"domain\": \"" + errors.ERROR_DOMAIN + "\", \"metadata\": {...}}`. "
        "The 0.3 dialect sends the same codes with `data` as an object.",
        "",
        "| code | reason (1.0 ErrorInfo) | exception | meaning |",
        "|---|---|---|---|",
    ]
    for cls, (code, reason) in errors.A2A_ERROR_CODES.items():
        lines.append(f"| {code} | `{reason}` | `{cls.__name__}` | {_cell(_meaning(cls))} |")
    lines += [
        "",
        "### Extension, session and legacy methods",
        "",
        "`data`, when present, is an object.",
        "",
        "| code | exception | meaning |",
        "|---|---|---|",
    ]
    for cls, code in errors.EXTENSION_ERROR_CODES.items():
        lines.append(f"| {code} | `{cls.__name__}` | {_cell(_meaning(cls))} |")
    lines.append("")
    return lines


def render(services: set[str] | None = None) -> str:
    """The whole of docs/protocol.md. ``services`` defaults to the configured keys."""
    if services is None:
        services = configured_services()
    by_family: dict[str, list[MethodSpec]] = {}
    for spec in methods.METHODS.values():
        by_family.setdefault(family_of(spec), []).append(spec)

    order = [STANDARD_FAMILY, *(name for name, _ in FAMILIES), OTHER_FAMILY, LEGACY_FAMILY]
    lines = intro() + limits_section() + error_sections() + task_section() + plan_section() + events_section()
    lines += card_section()
    lines += ["## Methods", "", "Grouped by family:", ""]
    lines += [f"- {name} ({len(by_family[name])})" for name in order if by_family.get(name)]
    lines.append("")

    for family in order:
        specs = by_family.get(family)
        if not specs:
            continue
        lines += [f"## {family}", ""]
        if family == STANDARD_FAMILY:
            groups = standard_groups(specs)
            lines += ["| 1.0 method | 0.3 methods |", "|---|---|"]
            lines += [f"| `{v1.name}` | {', '.join(_code(s.name) for s in v03) or '—'} |"
                      for v1, v03 in groups]
            lines += ["", "Each section below covers one operation under all its names. The "
                      "0.3 names take the same params in the 0.3 wire shapes (`kind`-tagged "
                      "parts, lower-case roles and states); the examples use the 1.0 shapes.", ""]
            for v1, v03 in groups:
                lines += method_section(v1, services, v03)
        else:
            if family == LEGACY_FAMILY:
                lines += ["Old dotted names kept for existing clients. Each behaves exactly like "
                          "the method that replaces it, with the extension error table.", ""]
            for spec in specs:
                lines += method_section(spec, services)
    while lines and lines[-1] == "":
        lines.pop()
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if docs/protocol.md differs from what would be generated")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = DOC_PATH.read_text(encoding="utf-8") if DOC_PATH.exists() else None
        if current != text:
            print(f"{DOC_PATH.relative_to(ROOT)} is out of date; run: python scripts/gen_protocol_docs.py",
                  file=sys.stderr)
            return 1
        print(f"{DOC_PATH.relative_to(ROOT)} is up to date")
        return 0
    DOC_PATH.parent.mkdir(parents=True, exist_ok=True)
    DOC_PATH.write_text(text, encoding="utf-8", newline="\n")
    print(f"wrote {DOC_PATH.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
