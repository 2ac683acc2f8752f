"""The gRPC binding's conversions (``a2a/grpc_wire.py``), and how the client picks a
gRPC interface from a card (``client_dialect``, ``client_grpc``)."""

import subprocess
import sys

import pytest
from google.rpc import error_details_pb2, status_pb2

from cleveragents.a2a import dialects, grpc_wire
from cleveragents.a2a.client import A2AClientError, select_interface
from cleveragents.a2a.client_grpc import dial_target
from cleveragents.a2a.errors import ValidationError, error_payload
from cleveragents.a2a.grpc_proto import pool
from cleveragents.domain.errors import TaskNotFoundError

CARD_URL = "http://agent.example/.well-known/agent-card.json"
JSONRPC = {"url": "http://agent.example/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
JSONRPC_03 = {**JSONRPC, "protocolVersion": "0.3"}
GRPC = {"url": "agent.example:50051", "protocolBinding": "GRPC", "protocolVersion": "1.0"}


def test_every_rpc_of_the_service_is_mapped():
    service = pool.pool().FindServiceByName(grpc_wire.SERVICE)
    for method in service.methods:
        rpc = grpc_wire.RPCS[method.name]
        assert method.input_type.name == rpc.request and method.server_streaming == rpc.streaming
        assert method.output_type.full_name in (f"lf.a2a.v1.{rpc.response}", rpc.response)
        assert grpc_wire.path(rpc) == f"/lf.a2a.v1.A2AService/{method.name}"
    assert len(grpc_wire.RPCS) == len(service.methods)


def test_messages_and_protojson_convert_both_ways():
    message, part = grpc_wire.message_class("Message"), grpc_wire.message_class("Part")
    request = grpc_wire.message_class("SendMessageRequest")(
        message=message(message_id="m1", role="ROLE_USER", parts=[part(text="hi"), part(raw=b"\x00\x01")]))
    params = grpc_wire.to_dict(request)
    assert params["message"]["role"] == "ROLE_USER" and params["message"]["parts"][1] == {"raw": "AAE="}
    assert grpc_wire.from_dict(params, "SendMessageRequest") == request
    assert grpc_wire.from_dict({"id": "t", "someFutureField": 1}, "Task").id == "t"  # unknown keys dropped
    with pytest.raises(grpc_wire.ConversionError):
        grpc_wire.from_dict({"id": ["not", "a", "string"]}, "Task")
    assert grpc_wire.from_dict(None, grpc_wire.EMPTY).ByteSize() == 0


def test_well_known_types_convert_in_the_private_pool():
    task = {"id": "t1", "status": {"state": "TASK_STATE_WORKING", "timestamp": "2026-01-02T03:04:05.500Z"},
            "metadata": {"list": [1.5, "x", None, {"nested": True}]},
            "artifacts": [{"artifactId": "a", "parts": [{"data": {"k": [1.0]}}]}]}
    message = grpc_wire.from_dict(task, "Task")
    assert message.status.timestamp.seconds == 1767323045 and message.metadata["list"][3]["nested"] is True
    assert grpc_wire.to_dict(message) == task


def test_an_error_becomes_a_status_and_back():
    error = error_payload(TaskNotFoundError("Task not found: t1", {"task_id": "t1"}), dialects.A2A_V1)
    code = grpc_wire.status_code_name(error)
    assert code == "NOT_FOUND"
    status = status_pb2.Status.FromString(grpc_wire.status_bytes(code, error))
    info = error_details_pb2.ErrorInfo()
    assert status.code == 5 and status.details[0].Unpack(info)
    assert (info.reason, info.domain, dict(info.metadata)) == ("TASK_NOT_FOUND", "a2a-protocol.org", {"task_id": "t1"})
    back = grpc_wire.error_of_status(code, "ignored", [(grpc_wire.STATUS_DETAILS_KEY, status.SerializeToString())])
    assert back["code"] == -32001 and back["message"] == "Task not found: t1"
    assert back["data"][0]["reason"] == "TASK_NOT_FOUND"


def test_a_status_is_read_whole_in_a_process_that_loaded_nothing_else():
    """The details are ``Any`` messages: reading them needs their types loaded, which a
    client process that never served gRPC has not done by itself."""
    error = error_payload(TaskNotFoundError("Task not found: t1", {"task_id": "t1"}), dialects.A2A_V1)
    sent = grpc_wire.status_bytes("NOT_FOUND", error).hex()
    script = ("from cleveragents.a2a import grpc_wire\n"
              f"back = grpc_wire.error_of_status('NOT_FOUND', '', [(grpc_wire.STATUS_DETAILS_KEY, bytes.fromhex('{sent}'))])\n"
              "print(back['code'], back['data'][0]['reason'])\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["-32001", "TASK_NOT_FOUND"], out.stdout + out.stderr


def test_bad_params_keep_their_field_violations():
    error = error_payload(ValidationError("Invalid params", {"errors": [
        {"loc": ["message"], "msg": "Field required", "type": "missing"}]}), dialects.A2A_V1)
    status = status_pb2.Status.FromString(grpc_wire.status_bytes("INVALID_ARGUMENT", error))
    assert [d.type_url.rsplit(".", 1)[-1] for d in status.details] == ["ErrorInfo", "BadRequest"]


def test_a_status_without_details_still_says_what_failed():
    refused = grpc_wire.error_of_status("UNAUTHENTICATED", "no token", [])
    assert refused["data"][0]["reason"] == "UNAUTHENTICATED" and refused["message"] == "no token"
    assert grpc_wire.error_of_status("INTERNAL", "", [])["code"] == -32603


def test_json_rpc_is_preferred_then_grpc_within_a_version():
    assert select_interface({"supportedInterfaces": [GRPC, JSONRPC]}, CARD_URL).binding == "JSONRPC"
    only_grpc = select_interface({"supportedInterfaces": [GRPC, JSONRPC_03]}, CARD_URL)
    assert (only_grpc.binding, only_grpc.url, only_grpc.version) == ("GRPC", GRPC["url"], "1.0")
    forced = select_interface({"supportedInterfaces": [JSONRPC, GRPC]}, CARD_URL, bindings=["GRPC"])
    assert forced.binding == "GRPC"
    legacy = select_interface({"supportedInterfaces": [GRPC, JSONRPC_03]}, CARD_URL, ["0.3"])
    assert (legacy.binding, legacy.version) == ("JSONRPC", "0.3")  # gRPC is 1.0 only
    with pytest.raises(A2AClientError, match="no JSON-RPC interface"):
        select_interface({"supportedInterfaces": [GRPC]}, CARD_URL, bindings=["JSONRPC"])


def where(url: str, card_url: str) -> tuple[str, bool]:
    dial = dial_target(url, card_url)
    return dial.target, dial.secure


def test_grpc_targets_and_tls():
    assert where("agent.example:50051", CARD_URL) == ("agent.example:50051", False)
    assert where("agent.example:50051", "https://agent.example/card.json") == ("agent.example:50051", True)
    assert where("grpcs://agent.example", CARD_URL) == ("agent.example:443", True)
    assert where("grpc://[::1]:7000", CARD_URL) == ("[::1]:7000", False)
    assert where("10.0.0.1:50051", CARD_URL) == ("10.0.0.1:50051", False)
    assert where("[::1]:7000", CARD_URL) == ("[::1]:7000", False)
    assert where("agent.example", CARD_URL) == ("agent.example", False)
    assert (dial_target("grpc://[::1]:7000", CARD_URL).host, dial_target("agent.example", CARD_URL).port) == ("::1", None)
    with pytest.raises(A2AClientError):
        dial_target("ftp://agent.example", CARD_URL)


@pytest.mark.parametrize("url", ["unix:/tmp/local-only.sock", "unix:///tmp/local-only.sock", "unix-abstract:name",
                                 "ipv4:169.254.169.254:80", "ipv6:[::1]:80", "vsock:2:1234", "dns:agent.example:50051",
                                 "dns:///agent.example:50051", "agent.example:50051/path", "user@agent.example:1",
                                 "agent.example:port", "agent.example:99999", "[::1", ""])
def test_a_grpc_target_is_a_host_and_port_not_any_of_grpcs_own_schemes(url):
    """A card names its gRPC interface, and gRPC reads a bare target with naming
    schemes of its own: a local socket, a fixed address. Such a target would get the
    calls, and their token, somewhere the card's host chose but the caller did not."""
    with pytest.raises(A2AClientError, match="HOST:PORT"):
        dial_target(url, CARD_URL)


def test_grpc_is_not_imported_on_the_startup_path():
    script = ("import sys\n"
              "from cleveragents.cli.main import build_parser\n"
              "build_parser(with_http=True).parse_args(['serve', '--grpc-port', '0'])\n"
              "import cleveragents.a2a.client, cleveragents.transports.http.main\n"
              "print(sorted(m for m in sys.modules if m.split('.')[0] in ('grpc', 'google', 'a2a')))\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stderr
