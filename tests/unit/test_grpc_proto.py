"""The vendored ``a2a.proto`` (``cleveragents/a2a/grpc_proto/``): it is the one the
a2a-sdk compiles, its compiled module is up to date, and its messages live beside the
SDK's in one process."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_python(script: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_the_compiled_module_is_what_the_vendored_proto_compiles_to():
    pytest.importorskip("grpc_tools", reason="scripts/gen_grpc.py needs grpcio-tools (the test extra)")
    result = subprocess.run([sys.executable, "scripts/gen_grpc.py", "--check"], capture_output=True, text=True,
                            timeout=120, cwd=ROOT)
    assert result.returncode == 0, result.stderr


def test_the_vendored_proto_is_the_specification_release_the_sdk_compiled():
    """The same FileDescriptorProto as the a2a-sdk's a2a_pb2 (built from the
    specification's v1.0.0 tag). If a later a2a-sdk moves to another release, vendor
    that one: scripts/reconstruct_a2a_proto.py, then scripts/gen_grpc.py."""
    from a2a.types import a2a_pb2
    from google.protobuf import descriptor_pb2

    from cleveragents.a2a.grpc_proto.a2a_descriptor import A2A_PROTO

    ours = descriptor_pb2.FileDescriptorProto.FromString(A2A_PROTO)
    sdk = descriptor_pb2.FileDescriptorProto.FromString(a2a_pb2.DESCRIPTOR.serialized_pb)
    assert (ours.name, ours.package) == ("a2a.proto", "lf.a2a.v1")
    assert ours == sdk
    header = (ROOT / "server/cleveragents/a2a/grpc_proto/a2a.proto").read_text().splitlines()[0]
    assert "v1.0.0" in header


@pytest.mark.parametrize("sdk_first", [True, False], ids=["sdk-first", "ours-first"])
def test_our_messages_and_the_sdks_share_a_process(sdk_first):
    """Two compiled a2a.proto in protobuf's default pool collide; ours is in a pool of
    its own, so either can load first, and each reads the other's bytes."""
    sdk = "from a2a.types import a2a_pb2\n"
    ours = ("from cleveragents.a2a import grpc_wire\n"
            "Task = grpc_wire.message_class('Task')\n")
    script = (sdk + ours if sdk_first else ours + sdk) + (
        "from google.protobuf import json_format\n"
        "mine = json_format.ParseDict({'id': 't1', 'status': {'state': 'TASK_STATE_COMPLETED'},\n"
        "                              'metadata': {'k': 'v'}}, Task())\n"
        "theirs = a2a_pb2.Task.FromString(mine.SerializeToString())\n"
        "assert json_format.MessageToDict(theirs) == json_format.MessageToDict(mine)\n"
        "assert Task.FromString(theirs.SerializeToString()) == mine\n"
        "assert type(mine) is not a2a_pb2.Task\n"
        "print('ok')\n")
    result = run_python(script)
    assert result.stdout.strip() == "ok", result.stderr


def test_a_second_a2a_proto_in_the_default_pool_collides():
    """Why the messages are in a private pool: the default pool takes one a2a.proto."""
    script = (
        "from google.protobuf import descriptor_pb2, descriptor_pool\n"
        "from a2a.types import a2a_pb2\n"
        "from cleveragents.a2a.grpc_proto.a2a_descriptor import A2A_PROTO\n"
        "copy = descriptor_pb2.FileDescriptorProto.FromString(A2A_PROTO)\n"
        "copy.message_type.add().name = 'AddedInALaterRelease'\n"
        "try:\n"
        "    descriptor_pool.Default().AddSerializedFile(copy.SerializeToString())\n"
        "except Exception as exc:\n"
        "    print(exc)\n")
    out = run_python(script).stdout
    assert "duplicate file name" in out and "a2a.proto" in out


def test_the_binding_needs_no_a2a_sdk():
    """The grpc extra no longer brings the a2a-sdk: nothing of the binding imports it."""
    script = ("import sys\n"
              "sys.modules['a2a'] = None  # any import of the SDK fails\n"
              "import grpc\n"
              "from cleveragents.a2a import grpc_wire\n"
              "from cleveragents.transports.grpc import service\n"
              "assert grpc_wire.missing_extra() is None\n"
              "for rpc in grpc_wire.RPCS.values():\n"
              "    grpc_wire.message_class(rpc.request), grpc_wire.message_class(rpc.response)\n"
              "assert sorted(grpc_wire.callables(grpc.insecure_channel('127.0.0.1:9'))) == sorted(grpc_wire.RPCS)\n"
              "print('ok')\n")
    result = run_python(script)
    assert result.stdout.strip() == "ok", result.stderr
