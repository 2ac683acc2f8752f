"""A published agent's ``A2A(...).serve(grpc_port=0)``, a real subprocess, called over
gRPC by our own client: the card names the port it bound, and a call goes through the
agent's handler, which learns
who the call was authenticated as."""

from __future__ import annotations

import subprocess
import sys

from cleveragents.a2a.client import A2AClient, ServerConnectionConfig
from cleveragents.domain.task import TaskArtifactUpdate, TaskState
from tests.conftest import REPO

TOKEN = "published-grpc-4f1a"


async def test_a_published_agent_serves_grpc_too(tmp_path):
    script = REPO / "tests" / "e2e" / "agents" / "grpc_agent.py"
    process = subprocess.Popen([sys.executable, str(script), TOKEN], cwd=tmp_path, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None
        seen: list[str] = []
        while not (line := process.stderr.readline()).startswith("listening on "):
            assert line, f"the agent stopped before listening: {''.join(seen)[-1500:]}"
            seen.append(line)
        target = next(s.split()[-1] for s in seen if s.startswith("gRPC listening on "))
        config = ServerConnectionConfig(url=line.split()[-1], token=TOKEN, timeout_seconds=20)
        async with A2AClient(config, binding="GRPC") as client:
            assert (client.interface.binding, client.interface.url) == ("GRPC", target)
            task = await client.send("hello")
            assert task.state is TaskState.COMPLETED
            assert "".join(p.text or "" for a in task.artifacts for p in a.parts) == "HELLO!"
            async with client.stream("again") as stream:
                chunks = [p.text for i in [i async for i in stream] if isinstance(i, TaskArtifactUpdate)
                          for p in i.artifact.parts]
            assert "".join(chunks) == "AGAIN!"
            who = await client.send("who")
            assert "".join(p.text or "" for a in who.artifacts for p in a.parts) == "bearerAuth"
    finally:
        process.terminate()
        assert process.wait(timeout=15) == 0
