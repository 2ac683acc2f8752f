"""`cleveragents-lsp` tells LSP framing from the Agent Client Protocol's by the first
bytes it reads, hands those bytes on to the server it picks, and loads only that
server's code. Real server processes, fed byte by byte where it matters."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import SERVER_COMMAND
from tests.e2e.rawclient import frame, unframe

LSP_INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"processId": None, "rootUri": None, "capabilities": {}}}
ACP_INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                  "params": {"protocolVersion": 1, "clientCapabilities": {}}}
PAUSE = 0.4  # long enough that the first read returns with only the first piece


async def exchange(pieces: list[bytes], *args: str, cwd: Path, importtime: bool = False) -> tuple[bytes, bytes]:
    """Send ``pieces`` with a pause between them, close stdin, and return stdout and stderr."""
    command = [SERVER_COMMAND[0], *(["-X", "importtime"] if importtime else []), *SERVER_COMMAND[1:]]
    proc = await asyncio.create_subprocess_exec(*command, *args, "--memory", cwd=cwd, stdin=subprocess.PIPE,
                                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdin is not None
    for index, piece in enumerate(pieces):
        if index:
            await asyncio.sleep(PAUSE)
        proc.stdin.write(piece)
        await proc.stdin.drain()
    await asyncio.sleep(PAUSE)
    proc.stdin.close()
    stdout, stderr = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, stderr.decode()
    return stdout, stderr


def lines(output: bytes) -> list[dict]:
    assert output.endswith(b"\n"), output
    return [json.loads(line) for line in output.splitlines()]


def answers_lsp(stdout: bytes) -> dict:
    (answer,) = unframe(stdout)
    assert answer["id"] == 1 and "capabilities" in answer["result"], answer
    return answer


def answers_acp(stdout: bytes) -> dict:
    (answer,) = lines(stdout)
    assert answer["id"] == 1 and answer["result"]["protocolVersion"] == 1, answer
    return answer


@pytest.mark.parametrize("pieces", [
    [frame(LSP_INITIALIZE)],
    [b"Cont", frame(LSP_INITIALIZE)[4:]],  # the first read holds part of the header's name
    [b"\r\n\r\n", frame(LSP_INITIALIZE)],  # blank lines before the first header
], ids=["whole", "cut-short", "blank-lines-first"])
async def test_content_length_framing_gets_the_lsp_server(pieces, tmp_path):
    stdout, _ = await exchange(pieces, cwd=tmp_path)
    answers_lsp(stdout)


@pytest.mark.parametrize("pieces", [
    [json.dumps(ACP_INITIALIZE).encode() + b"\n"],
    [b"{", json.dumps(ACP_INITIALIZE).encode()[1:] + b"\n"],  # only the brace came first
    [b" \n\t", json.dumps(ACP_INITIALIZE).encode() + b"\n"],  # whitespace before it
], ids=["whole", "cut-short", "whitespace-first"])
async def test_a_json_line_gets_the_agent_client_protocol_server(pieces, tmp_path):
    stdout, _ = await exchange(pieces, cwd=tmp_path)
    answers_acp(stdout)


async def test_protocol_flag_forces_lsp_even_for_a_json_line(tmp_path):
    # The line and the blank one after it are a header block to LSP's reader: refused, in LSP framing.
    stdout, _ = await exchange([json.dumps(ACP_INITIALIZE).encode() + b"\n\n"], "--protocol", "lsp", cwd=tmp_path)
    (answer,) = unframe(stdout)
    assert answer["id"] is None and answer["error"]["code"] == -32700


async def test_protocol_flag_forces_acp(tmp_path):
    stdout, _ = await exchange([json.dumps(ACP_INITIALIZE).encode() + b"\n"], "--protocol", "acp", cwd=tmp_path)
    answers_acp(stdout)
    stdout, _ = await exchange([frame(LSP_INITIALIZE)], "--protocol", "acp", cwd=tmp_path)
    refusals = lines(stdout)  # the header lines are not JSON: each is refused as a line of its own
    assert refusals and all(r["id"] is None and r["error"]["code"] == -32700 for r in refusals[:-1])


def imported(stderr: bytes) -> set[str]:
    """The modules ``-X importtime`` reports."""
    return {line.rsplit("|", 1)[-1].strip() for line in stderr.decode().splitlines() if line.startswith("import time:")}


async def test_each_path_loads_only_its_own_server(tmp_path):
    _, stderr = await exchange([frame(LSP_INITIALIZE)], cwd=tmp_path, importtime=True)
    modules = imported(stderr)
    assert "pygls" in modules and "cleveragents.transports.lsp.protocol" in modules
    assert not any(name.startswith("cleveragents.transports.agent_client") for name in modules)
    _, stderr = await exchange([json.dumps(ACP_INITIALIZE).encode() + b"\n"], cwd=tmp_path, importtime=True)
    modules = imported(stderr)
    assert "cleveragents.transports.agent_client.wire" in modules
    assert "pygls" not in modules and "lsprotocol" not in modules


def test_help_names_the_protocol_flag():
    result = subprocess.run([*SERVER_COMMAND, "--help"], capture_output=True, text=True, check=True, timeout=30)
    assert "--protocol {lsp,acp}" in result.stdout
    assert sys.executable  # the same interpreter runs the server


def test_requests_just_before_end_of_input_are_answered(tmp_path):
    """A piped script closes stdin at once: what it sent is still answered."""
    session_new = {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": str(tmp_path), "mcpServers": []}}
    lines_in = b"".join(json.dumps(m).encode() + b"\n" for m in (ACP_INITIALIZE, session_new))
    done = subprocess.run([*SERVER_COMMAND, "--memory"], input=lines_in, capture_output=True, cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    answers = {m.get("id"): m for m in lines(done.stdout)}
    assert answers[1]["result"]["protocolVersion"] == 1 and answers[2]["result"]["sessionId"]


def test_a_line_that_is_not_json_is_refused_and_the_next_is_served(tmp_path):
    lines_in = json.dumps(ACP_INITIALIZE).encode() + b"\n{not json\n" + json.dumps(
        {"jsonrpc": "2.0", "id": 2, "method": "session/unknown", "params": {}}).encode() + b"\n"
    done = subprocess.run([*SERVER_COMMAND, "--memory"], input=lines_in, capture_output=True, cwd=tmp_path, timeout=60)
    assert done.returncode == 0, done.stderr
    answers = {a["id"]: a for a in lines(done.stdout)}  # requests are served concurrently: any order
    assert sorted(answers, key=str) == [1, 2, None] and "result" in answers[1]
    assert answers[None]["error"]["code"] == -32700
    assert answers[2]["error"]["code"] == -32601 and answers[2]["error"]["data"] == {"method": "session/unknown"}



async def test_an_empty_params_array_is_no_params(tmp_path):
    """Lua encodes an empty table as `[]`: a Neovim client's `session/list` with `{}`
    is answered. Any other array is still refused."""
    proc = await asyncio.create_subprocess_exec(*SERVER_COMMAND, "--memory", cwd=tmp_path, stdin=subprocess.PIPE,
                                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin is not None and proc.stdout is not None

    async def ask(msg_id: int, method: str, params: object) -> dict:
        """One request, once the one before it has been answered; its answer."""
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode() + b"\n")
        while True:  # past the notifications
            answer = json.loads(await asyncio.wait_for(proc.stdout.readline(), 30))
            if answer.get("id") == msg_id:
                return answer

    try:
        await ask(1, "initialize", ACP_INITIALIZE["params"])
        session_id = (await ask(2, "session/new", {"cwd": str(tmp_path), "mcpServers": []}))["result"]["sessionId"]
        listed = await ask(3, "session/list", [])
        by_position = await ask(4, "session/list", [str(tmp_path)])
    finally:
        proc.stdin.close()
        await asyncio.wait_for(proc.wait(), 30)
    assert [session["sessionId"] for session in listed["result"]["sessions"]] == [session_id], listed
    assert by_position["error"]["code"] == -32602, by_position
    assert by_position["error"]["data"] == {"method": "session/list"}, by_position
