"""OpenTelemetry spans: a traced run shows a span for the request, the task turn, the
outbound call and each plan step, linked parent to child (the SDK's in-memory
exporter); the stdio server traces its requests too; and with tracing off, starting
and using the stdio server never imports opentelemetry."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from cleveragents import tracing
from cleveragents.config import Settings
from cleveragents.transports.http.app import build_app
from cleveragents.transports.http.auth import HttpAuth
from tests.contract.plan_cases import seed_files
from tests.contract.runners import UvicornServer
from tests.e2e.agent_server import AgentServer
from tests.fakes.a2a_agent import serving as remote_agent

TOKEN = "tracing-token-0c2e"
CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"


@pytest.fixture
def spans():
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.enable(provider)
    yield exporter
    tracing.disable()
    provider.shutdown()


class Rpc:
    def __init__(self, http: httpx.AsyncClient, url: str):
        self.http, self.url, self.ids = http, url, 0

    async def __call__(self, method: str, params: dict, headers: dict | None = None) -> dict:
        self.ids += 1
        body = {"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params}
        response = await self.http.post(self.url + "/a2a", json=body, headers=headers or {})
        answer = response.json()
        assert "result" in answer, answer
        return answer["result"]


def one(finished, name: str):
    found = [s for s in finished if s.name == name]
    assert len(found) == 1, f"{name}: {[s.name for s in finished]}"
    return found[0]


async def test_a_traced_run_links_request_turn_outbound_call_and_plan_steps(spans, tmp_path):
    settings = Settings(workspace=tmp_path, memory=True, tracing=True, actor_timeout=10)
    server = UvicornServer(build_app(settings=settings, auth=HttpAuth.of((TOKEN,), (), "X-API-Key")))
    with remote_agent() as remote:
        await server.start()
        try:
            headers = {"Authorization": f"Bearer {TOKEN}", "A2A-Version": "1.0"}
            async with httpx.AsyncClient(timeout=30, headers=headers) as http:
                rpc = Rpc(http, server.url)
                session = (await rpc("session.create", {"actor_name": f"a2a/{remote}"}))["session_id"]
                spans.clear()
                message = {"role": "ROLE_USER", "parts": [{"text": "ping"}], "messageId": "m-1", "contextId": session}
                caller = {"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"}
                task = (await rpc("SendMessage", {"message": message}, caller))["task"]
                assert task["status"]["state"] == "TASK_STATE_COMPLETED"
                finished = spans.get_finished_spans()

                request = one(finished, "SendMessage")
                assert request.kind is SpanKind.SERVER
                # The request joins the caller's trace (W3C traceparent).
                assert format(request.context.trace_id, "032x") == CALLER_TRACE
                assert format(request.parent.span_id, "016x") == CALLER_SPAN
                assert request.attributes[tracing.RPC_SYSTEM] == "jsonrpc"
                assert request.attributes[tracing.TRANSPORT] == "http"
                assert request.attributes[tracing.PROTOCOL_VERSION] == "1.0"

                turn = one(finished, "task.turn")
                assert turn.parent.span_id == request.context.span_id
                assert turn.attributes[tracing.TASK_ID] == task["id"]
                assert turn.attributes[tracing.CONTEXT_ID] == session
                assert turn.attributes[tracing.TASK_STATE] == "completed"

                outbound = [s for s in finished if s.kind is SpanKind.CLIENT]
                assert outbound, [s.name for s in finished]
                for call in outbound:
                    assert call.parent.span_id == turn.context.span_id
                    assert call.context.trace_id == request.context.trace_id
                    assert call.attributes[tracing.URL].startswith(remote)

                # A plan's steps, each a child of the request that runs them.
                seed_files(type("R", (), {"workspace": tmp_path})())
                plan = await rpc("_cleveragents/plan/use", {
                    "action_name": "replace", "automation_profile": "supervised",
                    "arguments": {"pattern": "foo", "replacement": "bar", "glob": "**/*.py"}})
                spans.clear()
                await rpc("_cleveragents/plan/execute", {"plan_id": plan["plan_id"]})
                finished = spans.get_finished_spans()
                execute = one(finished, "_cleveragents/plan/execute")
                steps = [s for s in finished if s.name == "plan.step"]
                assert steps and all(s.parent.span_id == execute.context.span_id for s in steps)
                assert steps[0].attributes[tracing.PLAN_ID] == plan["plan_id"]
                assert steps[0].attributes[tracing.OUTCOME] == "succeeded"
                assert steps[0].attributes[tracing.STEP_INDEX] == 0

                # An error answered is a failed span, with its code.
                spans.clear()
                body = {"jsonrpc": "2.0", "id": 99, "method": "GetTask", "params": {"id": "no-such-task"}}
                await http.post(server.url + "/a2a", json=body)
                failed = one(spans.get_finished_spans(), "GetTask")
                assert not failed.status.is_ok and failed.attributes[tracing.RPC_ERROR_CODE] == -32001
        finally:
            await server.stop()


# -- stdio, in a process of its own -----------------------------------------------------
SERVER = """
import atexit, sys

def report():
    loaded = sorted(m for m in sys.modules if m.split(".")[0] == "opentelemetry")
    sys.stderr.write("OTEL-MODULES=" + ",".join(loaded) + "\\n")

atexit.register(report)
from cleveragents.transports.lsp.main import main
sys.exit(main(["--memory"]))
"""


def run_stdio(tmp_path: Path, env: dict[str, str]) -> str:
    script = tmp_path / "server.py"
    script.write_text(SERVER)
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("CLEVERAGENTS_", "OTEL_"))}
    server = AgentServer(script, cwd=tmp_path, env={**clean, **env})
    try:
        message = {"role": "ROLE_USER", "parts": [{"text": "hello"}], "messageId": f"m-{time.monotonic()}"}
        server.result("SendMessage", {"message": message, "A2A-Version": "1.0"})
    finally:
        assert server.close() == 0
    return server.stderr()


def test_with_tracing_off_the_stdio_server_never_imports_opentelemetry(tmp_path):
    stderr = run_stdio(tmp_path, {})
    assert "OTEL-MODULES=\n" in stderr, stderr[-2000:]


def test_the_stdio_server_traces_its_requests_when_asked(tmp_path):
    stderr = run_stdio(tmp_path, {"CLEVERAGENTS_TRACING": "1", "OTEL_TRACES_EXPORTER": "console"})
    assert "OTEL-MODULES=opentelemetry" in stderr, stderr[-2000:]
    decoder, spans, at = json.JSONDecoder(), [], 0
    while (start := stderr.find('{\n    "name"', at)) != -1:
        span, at = decoder.raw_decode(stderr, start)
        spans.append(span)
    request = next(s for s in spans if s["name"] == "SendMessage")
    assert request["kind"] == "SpanKind.SERVER" and request["attributes"][tracing.TRANSPORT] == "stdio"
    turn = next(s for s in spans if s["name"] == "task.turn")
    assert turn["parent_id"] == request["context"]["span_id"]


def test_tracing_costs_nothing_when_off():
    tracing.disable()
    assert tracing.span("x", "server", {"a": 1}) is tracing.NO_SPAN
    assert tracing.detached_span("x") is tracing.NO_SPAN
    headers: dict[str, str] = {}
    tracing.inject(headers)
    assert headers == {}
