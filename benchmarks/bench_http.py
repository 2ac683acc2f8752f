"""HTTP benchmark: the echo agent served by our app against the same echo logic in a
plain a2a-sdk server, in the same run.

Run by hand:  .venv/bin/python benchmarks/bench_http.py [--quick]

Each server runs in its own process on 127.0.0.1 (a free port). Both are driven by the
same client code (httpx, JSON-RPC 1.0 with ``A2A-Version: 1.0``), so a difference comes
from the servers. Figures:

- sequential SendMessage throughput: one request at a time, requests per second;
- 16-concurrent SendMessage throughput: 16 requests in flight, requests per second;
- time to first stream event: from sending SendStreamingMessage to its first SSE
  ``data:`` line, milliseconds.

Each figure is the median of several rounds; a ratio divides ours by the SDK's round
of the same number, and is judged on the median of those, with the worst beside it.
Targets: at least 2x the SDK server's throughput, at most 0.5x its time to the first
event. This is a report, not a test.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from http_client import Connection
from targets import paired, target

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
FULL = {"rounds": 5, "requests": 300, "streams": 50, "warmup": 30}
QUICK = {"rounds": 2, "requests": 60, "streams": 10, "warmup": 10}
CONCURRENCY = 16
# Ours is served as by default, behind a token; the SDK's server ignores the header.
TOKEN = "bench-token-0c1d2e3f"
V1 = {"A2A-Version": "1.0", "Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"}
STREAM_HEADERS = {**V1, "Accept": "text/event-stream"}


# -- the two servers (run in child processes) ----------------------------------------
def serve_ours() -> None:
    sys.path.insert(0, str(REPO))
    from cleveragents import A2A, Agent
    from tests.e2e.agents.echo_agent import echo

    A2A(agent=Agent(name="Echo", handler=echo), auth_token=TOKEN).serve(port=0, memory=True)


def serve_sdk() -> None:
    import uvicorn
    from a2a.helpers.proto_helpers import new_task_from_user_message
    from a2a.server.agent_execution import AgentExecutor
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes.agent_card_routes import create_agent_card_routes
    from a2a.server.routes.jsonrpc_routes import create_jsonrpc_routes
    from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
    from a2a.types import a2a_pb2 as pb
    from starlette.applications import Starlette

    sys.path.insert(0, str(REPO))
    from tests.e2e.agents.echo_agent import echo

    class EchoExecutor(AgentExecutor):
        """The echo agent's turn: submitted, working, one artifact, completed."""

        async def execute(self, context: Any, event_queue: Any) -> None:
            task = context.current_task or new_task_from_user_message(context.message)
            if context.current_task is None:
                await event_queue.enqueue_event(task)
            updater = TaskUpdater(event_queue, task.id, task.context_id)
            await updater.start_work()
            reply = await echo(context.get_user_input())
            await updater.add_artifact([pb.Part(text=reply)], name="response", last_chunk=True)
            await updater.complete()

        async def cancel(self, context: Any, event_queue: Any) -> None:
            await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()

    card = pb.AgentCard(name="Echo", description="Echo", version="1.0.0",
                        capabilities=pb.AgentCapabilities(streaming=True),
                        default_input_modes=["text/plain"], default_output_modes=["text/plain"],
                        supported_interfaces=[pb.AgentInterface(url="http://127.0.0.1/a2a", protocol_binding="JSONRPC",
                                                                protocol_version="1.0")])
    handler = DefaultRequestHandler(EchoExecutor(), InMemoryTaskStore(), card)
    app = Starlette(routes=[*create_jsonrpc_routes(handler, rpc_url="/a2a"), *create_agent_card_routes(card)])
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning")
    server = uvicorn.Server(config)

    async def run() -> None:
        serving = asyncio.ensure_future(server.serve())
        while not server.started:
            await asyncio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        sys.stderr.write(f"listening on http://127.0.0.1:{port}\n")
        sys.stderr.flush()
        await serving

    asyncio.run(run())


# -- the client ------------------------------------------------------------------------
def start(kind: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen([sys.executable, __file__, "--serve", kind], stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(REPO / "server")})
    assert process.stderr is not None
    while True:
        line = process.stderr.readline()
        if not line:
            raise RuntimeError(f"the {kind} server did not start")
        if match := re.search(r"listening on (http://\S+)", line):
            return process, match.group(1)


def send_body(n: int, method: str = "SendMessage") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": n, "method": method,
            "params": {"message": {"role": "ROLE_USER", "messageId": f"m{n}-{time.monotonic_ns()}",
                                   "parts": [{"text": f"hello {n}"}]}}}


def _completed(result: dict[str, Any]) -> None:
    assert result["task"]["status"]["state"] == "TASK_STATE_COMPLETED", result


class RawClient:
    """The measuring client (http_client.py): keep-alive connections, one per request
    in flight."""

    def __init__(self, url: str):
        self.url = url
        self._idle: list[Any] = []

    async def _connection(self) -> Any:
        return self._idle.pop() if self._idle else await Connection.open(self.url)

    async def send(self, n: int) -> None:
        pooled = bool(self._idle)
        connection = await self._connection()
        try:
            answer = await connection.post_json("/a2a", send_body(n), V1)
        except (asyncio.IncompleteReadError, ConnectionError):
            if not pooled:
                raise
            # The server closed it while it was idle (keep-alive timeout): retry on a new one, as clients do.
            with contextlib.suppress(OSError):
                await connection.close()
            connection = await Connection.open(self.url)
            answer = await connection.post_json("/a2a", send_body(n), V1)
        _completed(answer["result"])
        self._idle.append(connection)

    async def first_event_ms(self, n: int) -> float:
        connection = await self._connection()
        began, first = time.perf_counter(), None
        async for chunk in connection.post_stream("/a2a", send_body(n, "SendStreamingMessage"), STREAM_HEADERS):
            if first is None and b"data:" in chunk:  # then read to the end, as a client would
                first = (time.perf_counter() - began) * 1000
        self._idle.append(connection)
        assert first is not None
        return first

    async def aclose(self) -> None:
        for connection in self._idle:
            await connection.close()


class HttpxClient:
    """httpx, for comparison (``--client httpx``): its own cost is in every figure."""

    def __init__(self, url: str):
        import httpx

        self.endpoint = url + "/a2a"
        limits = httpx.Limits(max_connections=CONCURRENCY, max_keepalive_connections=CONCURRENCY)
        self._client = httpx.AsyncClient(timeout=30, limits=limits)

    async def send(self, n: int) -> None:
        _completed((await self._client.post(self.endpoint, json=send_body(n), headers=V1)).json()["result"])

    async def first_event_ms(self, n: int) -> float:
        began, first = time.perf_counter(), None
        async with self._client.stream("POST", self.endpoint, json=send_body(n, "SendStreamingMessage"),
                                       headers=STREAM_HEADERS) as response:
            async for line in response.aiter_lines():
                if first is None and line.startswith("data:"):
                    first = (time.perf_counter() - began) * 1000
        assert first is not None
        return first

    async def aclose(self) -> None:
        await self._client.aclose()


CLIENTS = {"raw": RawClient, "httpx": HttpxClient}


async def sequential(client: Any, count: int) -> float:
    began = time.perf_counter()
    for n in range(count):
        await client.send(n)
    return count / (time.perf_counter() - began)


async def concurrent(client: Any, count: int) -> float:
    numbers = iter(range(count))

    async def worker() -> None:
        for n in numbers:
            await client.send(n)

    began = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return count / (time.perf_counter() - began)


async def first_event_ms(client: Any, count: int) -> float:
    return statistics.median([await client.first_event_ms(n) for n in range(count)])


async def measure(url: str, sizes: dict[str, int], client_kind: str) -> dict[str, list[float]]:
    client = CLIENTS[client_kind](url)
    try:
        await concurrent(client, sizes["warmup"])
        await first_event_ms(client, 3)
        seq = [await sequential(client, sizes["requests"]) for _ in range(sizes["rounds"])]
        par = [await concurrent(client, sizes["requests"]) for _ in range(sizes["rounds"])]
        first = [await first_event_ms(client, sizes["streams"]) for _ in range(sizes["rounds"])]
    finally:
        await client.aclose()
    return {"sequential": seq, "concurrent": par, "first_event_ms": first}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer requests and rounds")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the raw numbers here")
    parser.add_argument("--client", choices=sorted(CLIENTS), default="raw",
                        help="the measuring client: a minimal HTTP/1.1 one (default), or httpx")
    parser.add_argument("--serve", choices=["ours", "sdk"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve == "ours":
        serve_ours()
        return 0
    if args.serve == "sdk":
        serve_sdk()
        return 0
    sizes = QUICK if args.quick else FULL
    results: dict[str, dict[str, list[float]]] = {}
    for kind in ("ours", "sdk"):
        process, url = start(kind)
        try:
            results[kind] = asyncio.run(measure(url, sizes, args.client))
        finally:
            process.terminate()
            process.wait(10)
    from importlib.metadata import version

    # round n of ours over round n of the SDK's: the median of those ratios, and the worst
    ratios = {key: paired(results["ours"][key], results["sdk"][key], "higher" if key != "first_event_ms" else "lower")
              for key in results["ours"]}
    ours = {key: ratio["ours"] for key, ratio in ratios.items()}
    sdk = {key: ratio["baseline"] for key, ratio in ratios.items()}
    print(f"Python {sys.version.split()[0]}, a2a-sdk {version('a2a-sdk')}, uvicorn {version('uvicorn')}, "
          f"starlette {version('starlette')}; {sizes['rounds']} rounds of {sizes['requests']} requests, "
          f"{sizes['streams']} streams; medians; client: {args.client}")
    print(f"{'figure':<38}{'cleveragents':>14}{'a2a-sdk':>12}{'ratio':>9}{'worst':>9}  target")
    rows = [("sequential SendMessage", "req/s", "sequential", ">=", 2.0),
            (f"{CONCURRENCY}-concurrent SendMessage", "req/s", "concurrent", ">=", 2.0),
            ("time to first stream event", "ms", "first_event_ms", "<=", 0.5)]
    for label, unit, key, op, limit in rows:
        print(f"{f'{label} ({unit})':<38}{ours[key]:>14.1f}{sdk[key]:>12.1f}{ratios[key]['value']:>8.2f}x"
              f"{ratios[key]['worst']:>8.2f}x  {op} {limit}x")
    if args.json:
        targets = [target(f"{label}, ours / a2a-sdk", op=op, limit=limit, unit=unit, **ratios[key])
                   for label, unit, key, op, limit in rows]
        args.json.write_text(json.dumps({"settings": sizes, "results": results, "targets": targets}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
