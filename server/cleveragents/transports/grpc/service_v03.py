"""The A2A 0.3 service, ``a2a.v1.A2AService``, served beside 1.0's by ``service.py``:
each RPC is a 0.3 JSON-RPC call (``a2a/grpc_wire_v03.py`` says which, and converts its
messages), answered in the 0.3 dialect whatever ``a2a-version`` says (a 0.3 client
doesn't send it). Errors are the statuses the 0.3 SDK's own gRPC server sends, with
``"<ErrorName>: <message>"`` as details; a refusal (``UNAUTHENTICATED``...) has its
message alone, since 0.3 names no error for it.
"""

from __future__ import annotations

from typing import Any

from cleveragents.a2a import dialects, grpc_wire, grpc_wire_v03
from cleveragents.transports.grpc.service import RpcShape


class V03Binding:
    service = grpc_wire_v03.SERVICE
    dialect = dialects.A2A_V03

    def rpcs(self) -> list[RpcShape]:
        return [RpcShape(rpc.name, grpc_wire_v03.message_class(rpc.request),
                         grpc_wire_v03.message_class(rpc.response), rpc.streaming, rpc)
                for rpc in grpc_wire_v03.RPCS.values()]

    def method(self, rpc: RpcShape) -> str:
        method: str = rpc.wire.method
        return method

    def call(self, rpc: RpcShape, request: bytes, headers: dict[str, str]) -> tuple[str, dict[str, Any], str]:
        return rpc.wire.method, rpc.wire.params(grpc_wire.read(rpc.request_class, request)), grpc_wire_v03.VERSION

    def answer(self, rpc: RpcShape, value: Any) -> Any:
        return grpc_wire_v03.from_dict(rpc.wire.result(value), rpc.wire.response)

    def status(self, error: dict[str, Any], code_name: str | None) -> tuple[str, str, tuple[tuple[str, Any], ...]]:
        if code_name is not None:  # a refusal, or no services: the status says what it is, not an A2A error
            return code_name, str(error.get("message", "")), ()
        status, details = grpc_wire_v03.status(error)
        return status, details, ()
