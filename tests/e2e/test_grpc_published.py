"""A published agent's ``A2A(...).serve(grpc_port=0)``, a real subprocess, called over
gRPC by our own client: the card names the port it bound, and a call goes through the
agent's handler, which learns
who the call was authenticated as."""

from __future__ import annotations

import sys

from cleveragents.a2a.client import A2AClient, ServerConnectionConfig
from cleveragents.domain.task import TaskArtifactUpdate, TaskState
from tests.conftest import REPO
from tests.listening import listening

TOKEN = "published-grpc-4f1a"


async def test_a_published_agent_serves_grpc_too(tmp_path):
    script = REPO / "tests" / "e2e" / "agents" / "grpc_agent.py"
    with listening([sys.executable, str(script), TOKEN], clean_exit=True, cwd=tmp_path) as served:
        target = next(s.split()[-1] for s in served.before if s.startswith("gRPC listening on "))
        config = ServerConnectionConfig(url=served.url, token=TOKEN, timeout_seconds=20)
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
