#!/usr/bin/env python
"""Write the vendored ``a2a.proto`` from the descriptor the a2a-sdk wheel compiled.

    python scripts/reconstruct_a2a_proto.py   # write server/cleveragents/a2a/grpc_proto/a2a.proto

No package that can be installed here (PyPI, npm) ships the text of the A2A 1.0
``a2a.proto``. The a2a-sdk wheel ships it compiled: ``a2a.types.a2a_pb2`` holds the
``FileDescriptorProto`` that buf made from the specification's ``specification/a2a.proto``
at tag v1.0.0 (the sdist's ``buf.gen.yaml`` names the tag). This script prints that
descriptor back as a ``.proto`` file with the same declarations; compiling it gives the
same descriptor (``tests/unit/test_grpc_proto.py`` checks). A descriptor keeps no
comments, and keeps messages and enums in two lists, so the file has none of the
specification's comments, and lists the service, then the messages, then the enums.

Run it again only to vendor another release of the specification, with an a2a-sdk built
from it; then ``python scripts/gen_grpc.py`` regenerates the module the backend loads.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PROTO_PATH = ROOT / "server" / "cleveragents" / "a2a" / "grpc_proto" / "a2a.proto"
SPEC_VERSION = "v1.0.0"

HEADER = """\
// The A2A specification's a2a.proto, version {spec} (package lf.a2a.v1): the
// specification repository's specification/a2a.proto at tag {spec}.
//
// Reconstructed, not copied: no package installable here ships the text, so
// scripts/reconstruct_a2a_proto.py printed it from the compiled descriptor in the
// a2a-sdk {sdk} wheel (a2a/types/a2a_pb2.py, which buf generated from that tag, as
// the sdist's buf.gen.yaml says). Compiling this file gives the same descriptor
// (tests/unit/test_grpc_proto.py). The specification's comments are not in a
// descriptor, so they are not here: read the specification for what each field
// means. Its file options are the ones buf's managed mode wrote.
//
// The A2A specification is licensed under the Apache License, Version 2.0.
//
// Regenerate the module the backend loads after editing: python scripts/gen_grpc.py
"""

SCALARS = {
    "TYPE_DOUBLE": "double", "TYPE_FLOAT": "float", "TYPE_INT64": "int64", "TYPE_UINT64": "uint64",
    "TYPE_INT32": "int32", "TYPE_FIXED64": "fixed64", "TYPE_FIXED32": "fixed32", "TYPE_BOOL": "bool",
    "TYPE_STRING": "string", "TYPE_BYTES": "bytes", "TYPE_UINT32": "uint32", "TYPE_SFIXED32": "sfixed32",
    "TYPE_SFIXED64": "sfixed64", "TYPE_SINT32": "sint32", "TYPE_SINT64": "sint64",
}


def sdk_descriptor() -> tuple[Any, str]:
    """The a2a-sdk's compiled FileDescriptorProto of a2a.proto, and the SDK's version.
    Importing a2a_pb2 also loads the google.api options its fields and methods carry."""
    from importlib.metadata import version

    from a2a.types import a2a_pb2
    from google.protobuf import descriptor_pb2

    return descriptor_pb2.FileDescriptorProto.FromString(a2a_pb2.DESCRIPTOR.serialized_pb), version("a2a-sdk")


def _json_name(name: str) -> str:
    """protoc's default json_name: underscores dropped, the next letter upper-cased."""
    parts = name.split("_")
    return parts[0] + "".join(part[:1].upper() + part[1:] for part in parts[1:])


def _literal(field: Any, value: Any) -> str:
    from google.protobuf import text_format

    if field.type == field.TYPE_MESSAGE:
        return "{\n" + text_format.MessageToString(value, indent=2) + "}"
    if field.type == field.TYPE_ENUM:
        return field.enum_type.values_by_number[value].name
    if field.type == field.TYPE_STRING:
        return _quoted(value)
    if field.type == field.TYPE_BOOL:
        return "true" if value else "false"
    return str(value)


def _quoted(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _options(options: Any) -> Iterator[str]:
    """Each option set in an options message, as ``name = value`` (an extension's name in
    parentheses; a repeated option once per value)."""
    for field, value in options.ListFields():
        name = f"({field.full_name})" if field.is_extension else field.name
        repeated = field.is_repeated if hasattr(field, "is_repeated") else field.label == field.LABEL_REPEATED
        for one in (value if repeated else [value]):
            yield f"{name} = {_literal(field, one)}"


def _type_name(field: Any, package: str) -> str:
    if field.type_name:
        name: str = field.type_name.lstrip(".")
        return name.removeprefix(package + ".")
    return SCALARS[field.Type.Name(field.type)]


class Printer:
    def __init__(self, file: Any):
        self.file = file
        self.package = file.package
        self.lines: list[str] = []

    def emit(self, depth: int, text: str = "") -> None:
        """One line at ``depth``; a multi-line option value keeps its own indentation."""
        self.lines.extend("  " * depth + line if line else "" for line in text.split("\n"))

    def field(self, field: Any, maps: dict[str, Any], depth: int) -> None:
        entry = maps.get(field.type_name)
        if entry is not None:
            key, value = entry.field
            kind = f"map<{_type_name(key, self.package)}, {_type_name(value, self.package)}>"
        else:
            label = ("repeated " if field.label == field.LABEL_REPEATED else
                     "optional " if field.proto3_optional else "")
            kind = label + _type_name(field, self.package)
        options = list(_options(field.options))
        if field.json_name and field.json_name != _json_name(field.name):
            options.insert(0, f"json_name = {_quoted(field.json_name)}")
        suffix = f" [{', '.join(options)}]" if options else ""
        self.emit(depth, f"{kind} {field.name} = {field.number}{suffix};")

    def message(self, message: Any, scope: str, depth: int) -> None:
        full = f"{scope}.{message.name}"
        maps = {f".{full}.{nested.name}": nested for nested in message.nested_type if nested.options.map_entry}
        self.emit(depth, f"message {message.name} {{")
        for option in _options(message.options):
            self.emit(depth + 1, f"option {option};")
        for nested in message.nested_type:
            if not nested.options.map_entry:
                self.message(nested, full, depth + 1)
        for enum in message.enum_type:
            self.enum(enum, depth + 1)
        open_oneof = None
        for field in message.field:
            real = field.HasField("oneof_index") and not field.proto3_optional
            oneof = field.oneof_index if real else None
            if oneof != open_oneof:
                if open_oneof is not None:
                    self.emit(depth + 1, "}")
                if oneof is not None:
                    self.emit(depth + 1, f"oneof {message.oneof_decl[oneof].name} {{")
                open_oneof = oneof
            self.field(field, maps, depth + 1 + (oneof is not None))
        if open_oneof is not None:
            self.emit(depth + 1, "}")
        for reserved in message.reserved_range:
            self.emit(depth + 1, f"reserved {reserved.start} to {reserved.end - 1};")
        for name in message.reserved_name:
            self.emit(depth + 1, f"reserved {_quoted(name)};")
        self.emit(depth, "}")

    def enum(self, enum: Any, depth: int) -> None:
        self.emit(depth, f"enum {enum.name} {{")
        for option in _options(enum.options):
            self.emit(depth + 1, f"option {option};")
        for value in enum.value:
            options = list(_options(value.options))
            suffix = f" [{', '.join(options)}]" if options else ""
            self.emit(depth + 1, f"{value.name} = {value.number}{suffix};")
        self.emit(depth, "}")

    def service(self, service: Any) -> None:
        self.emit(0, f"service {service.name} {{")
        for method in service.method:
            stream = "stream " if method.server_streaming else ""
            client = "stream " if method.client_streaming else ""
            head = (f"rpc {method.name}({client}{method.input_type.lstrip('.').removeprefix(self.package + '.')}) "
                    f"returns ({stream}{method.output_type.lstrip('.').removeprefix(self.package + '.')})")
            options = list(_options(method.options))
            if not options:
                self.emit(1, head + " {}")
                continue
            self.emit(1, head + " {")
            for option in options:
                self.emit(2, f"option {option};")
            self.emit(1, "}")
        self.emit(0, "}")

    def text(self) -> str:
        file = self.file
        self.emit(0, f'syntax = "{file.syntax or "proto2"}";')
        self.emit(0)
        self.emit(0, f"package {file.package};")
        self.emit(0)
        for dependency in file.dependency:
            self.emit(0, f"import {_quoted(dependency)};")
        self.emit(0)
        for option in _options(file.options):
            self.emit(0, f"option {option};")
        for service in file.service:
            self.emit(0)
            self.service(service)
        for message in file.message_type:
            self.emit(0)
            self.message(message, file.package, 0)
        for enum in file.enum_type:
            self.emit(0)
            self.enum(enum, 0)
        return "\n".join(self.lines) + "\n"


def render() -> str:
    file, sdk = sdk_descriptor()
    return HEADER.format(spec=SPEC_VERSION, sdk=sdk) + "\n" + Printer(file).text()


def main() -> int:
    PROTO_PATH.parent.mkdir(parents=True, exist_ok=True)
    PROTO_PATH.write_text(render())
    print(f"wrote {PROTO_PATH.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
