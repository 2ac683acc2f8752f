"""The A2A gRPC messages, built from the vendored ``a2a.proto`` (1.0, package
``lf.a2a.v1``) and ``a2a_v0_3.proto`` (0.3, package ``a2a.v1``) in a descriptor pool of
their own.

protobuf registers every compiled ``.proto`` in one process-wide default pool, where a
second ``a2a.proto`` (the a2a-sdk's, in a process that uses both) would collide, and
the 0.3 a2a-sdk's package ``a2a.v1`` with our 0.3 messages:
``duplicate file name a2a.proto``. So the compiled descriptor (``a2a_descriptor.py``)
goes into a private ``DescriptorPool``, after the files it imports, which come from the
installed protobuf and googleapis-common-protos. The classes are ordinary message
classes: ``json_format`` converts them, well-known types (Struct, Timestamp) included.
protobuf is imported on first use: the ``grpc`` extra is optional.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

PACKAGE = "lf.a2a.v1"
SERVICE = f"{PACKAGE}.A2AService"
PACKAGE_V03 = "a2a.v1"
SERVICE_V03 = f"{PACKAGE_V03}.A2AService"


@functools.cache
def pool() -> Any:
    """The private pool that holds both protos and the files they import."""
    from cleveragents.a2a.grpc_proto.a2a_descriptor import A2A_PROTO
    from cleveragents.a2a.grpc_proto.a2a_v0_3_descriptor import A2A_V0_3_PROTO

    descriptor_pb2 = importlib.import_module("google.protobuf.descriptor_pb2")
    private = importlib.import_module("google.protobuf.descriptor_pool").DescriptorPool()
    added: set[str] = set()
    for serialized in (A2A_PROTO, A2A_V0_3_PROTO):
        for dependency in descriptor_pb2.FileDescriptorProto.FromString(serialized).dependency:
            _add_installed(private, dependency, added)
        private.AddSerializedFile(serialized)
    return private


def _add_installed(private: Any, name: str, added: set[str]) -> None:
    """Add the installed compiled file ``name`` (``google/api/http.proto`` is
    ``google.api.http_pb2``), after the files it imports."""
    if name in added:
        return
    file = importlib.import_module(name.removesuffix(".proto").replace("/", ".") + "_pb2").DESCRIPTOR
    for dependency in file.dependencies:
        _add_installed(private, dependency.name, added)
    private.AddSerializedFile(file.serialized_pb)
    added.add(name)


@functools.cache
def message_class(full_name: str) -> Any:
    """The class of the message ``full_name`` (``lf.a2a.v1.Task``, ``a2a.v1.Task``,
    ``google.protobuf.Empty``)."""
    message_factory = importlib.import_module("google.protobuf.message_factory")
    return message_factory.GetMessageClass(pool().FindMessageTypeByName(full_name))
