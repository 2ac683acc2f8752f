"""No input stalls the server: patterns that backtrack, globs that backtrack, giant
lines, huge match counts and many searches at once, sent to a real stdio server and a
real HTTP server.

They run as the unprivileged user only, the one users are. Unlike the sandbox's and
the file access's attacks, nothing these attacks reach (the pattern engine, globbing,
the encoders, the event loop) takes a path that depends on who runs it; and the tests
measure time, so they run last, alone on the machine (``serial``), where a second
identity would double their share of the suite's time.

Each attack runs while a client keeps asking for the health check; every check must
come back within ``HEALTH_LIMIT``. The latency is the client's round trip, the figure an
editor waits on: a server-side timer would start only once the event loop reads the
request, so it would never see the stall it is meant to catch. The client does little
besides (the attacks' answers are kept small), so what the round trip measures is the
server.

A pattern with a construct the linear-time engine lacks (a backreference, a
lookaround) is refused with -32602 naming it, and a tool that runs past its time
limit fails with an error naming the limit.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.security.identities import Identity, identity_for
from tests.security.stall_clients import (
    Call,
    HttpServer,
    StdioServer,
    describe,
    health_latencies,
    message,
    reply_text,
)

# Latency bounds: another worker's load on the same CPUs would break them.
pytestmark = pytest.mark.serial

HEALTH_LIMIT = 0.100  # seconds
INVALID_PARAMS = -32602
BUDGET_EXCEEDED = -32006
REPRODUCER = "fs.search (.|.)*QQQ glob=src/long.py"
LONG_NAME = "a" * 200 + ".txt"
BIG_FILES, BIG_FILE_BYTES = 16, 1536 * 1024
GIANT_LINE_BYTES = 8 * 1024 * 1024
# Files whose rewrite makes a diff near its caps (1 MiB a file, 8 MiB in all), in text
# that JSON must escape: the answer is about 15 MiB.
WIDE_FILES, WIDE_LINES = 12, 6000
# Patterns that take exponential or high-polynomial time in a backtracking engine, on
# the giant line of `a`s.
BACKTRACKING = [
    "(.|.)*QQQ", "(a+)+b", "(a|aa)*c", "(a|a?)+b", r"(\w+\s?)*Q", "(a*)*b", "(.*a){12}Q", "^(a+)+$x",
]
# A search with no literal to skip ahead by: every byte of every file is looked at.
HEAVY_SEARCH = "fs.search '[a-z]+_never_[0-9]+' glob=big/** max_results=5"


def _big_file(index: int) -> bytes:
    line = f"    value_{index} = compute(alpha, beta) + other_function(gamma)  # note {index}\n".encode()
    return line * (BIG_FILE_BYTES // len(line))


def build_workspace(identity: Identity) -> Path:
    ws = identity.directory("ws")
    (ws / "src").mkdir()
    (ws / "src" / "long.py").write_text("a" * 60 + "\n")
    (ws / "big").mkdir()
    for index in range(BIG_FILES):
        (ws / "big" / f"module_{index}.py").write_bytes(_big_file(index))
    (ws / "giant.txt").write_bytes(b"a" * GIANT_LINE_BYTES)
    (ws / "names").mkdir()
    (ws / "names" / LONG_NAME).write_text("x\n")
    (ws / "wide").mkdir()
    wide = "".join(f"é ligne {n}\tavec \"des guillemets\" et du texte en plus\n" for n in range(WIDE_LINES))
    for index in range(WIDE_FILES):
        (ws / "wide" / f"page_{index}.txt").write_text(wide)
    identity.own(ws)
    return ws


Start = Callable[..., Awaitable[Any]]


@pytest.fixture
def identity() -> Iterator[Identity]:
    yield from identity_for("unprivileged")


@pytest.fixture
async def servers(identity: Identity) -> AsyncIterator[Start]:
    """``await servers(kind, **env)``: a stdio or HTTP server on a fresh attack workspace."""
    started: list[Any] = []
    ws = build_workspace(identity)

    async def start(kind: str = "stdio", **env: str) -> Any:
        server = await (StdioServer if kind == "stdio" else HttpServer).start(identity, ws, env)
        started.append(server)
        # The first message imports what answering one needs (the codecs, the actor):
        # start-up work, done before the attack so it is not taken for one.
        await server.call("SendMessage", message("fs.glob src/*"))
        return server

    yield start
    for server in started:
        await server.close()


async def under_attack(call: Call, attacks: list[Callable[[], Awaitable[Any]]], *,
                       samples: int = 80) -> tuple[list[Any], list[float]]:
    """Run ``attacks`` one after another, round and round, while sampling the health
    check, until there are ``samples`` and every attack has run; the result of each
    attack's first run, and the latencies. One at a time, so a sample measures what the
    attack does to the server, not a burst of starts on two CPUs (many at once is
    ``test_many_concurrent_heavy_searches_leave_the_health_check_fast``)."""
    results: dict[int, Any] = {}
    stop = asyncio.Event()

    async def attack() -> None:
        for index in itertools.cycle(range(len(attacks))):
            if stop.is_set():
                return
            results.setdefault(index, await attacks[index]())

    attacker = asyncio.ensure_future(attack())
    latencies: list[float] = []
    try:
        await asyncio.sleep(0.05)  # the first attack is in the server before the first sample
        while len(latencies) < samples or len(results) < len(attacks):
            if attacker.done():
                attacker.result()  # an attack's own assertion
            latencies += await health_latencies(call, samples=1)
        stop.set()
        await asyncio.wait_for(attacker, 60)
    finally:
        attacker.cancel()
    return [results[index] for index in range(len(attacks))], latencies


def assert_fast(latencies: list[float]) -> None:
    assert max(latencies) < HEALTH_LIMIT, f"the health check was slow under attack: {describe(latencies)}"


async def send(call: Call, text: str) -> tuple[str, float]:
    """The reply to ``text`` and how long it took."""
    started = time.perf_counter()
    reply = reply_text(await call("SendMessage", message(text)))
    return reply, time.perf_counter() - started


# -- the reported reproducer, on stdio and HTTP ------------------------------------------------
@pytest.mark.parametrize("kind", ["stdio", "http"])
async def test_the_reported_pattern_answers_at_once(servers, kind):
    server = await servers(kind)
    (reply, seconds), = (await under_attack(server.call, [lambda: send(server.call, REPRODUCER)]))[0]
    assert reply.startswith("fs.search: 0 matches in 1 files"), reply
    assert seconds < 5, f"the search took {seconds:.1f} s"
    # and the server is still there for everyone
    assert (await server.call("_cleveragents/health/check", {}))["result"]["status"] == "ok"


async def test_backtracking_patterns_on_a_giant_line_keep_the_server_answering(servers):
    server = await servers()
    attacks = [lambda p=pattern: send(server.call, f"fs.search '{p}' glob=giant.txt") for pattern in BACKTRACKING]
    results, latencies = await under_attack(server.call, attacks)
    for pattern, (reply, seconds) in zip(BACKTRACKING, results, strict=True):
        assert reply.startswith("fs.search: "), (pattern, reply)
        assert "refused" not in reply.split("\n", 1)[0], (pattern, reply)
        assert seconds < 30, f"{pattern}: {seconds:.1f} s"
    assert_fast(latencies)


# -- globs -------------------------------------------------------------------------------------
async def test_catastrophic_globs_match_in_linear_time(servers):
    server = await servers()
    attacks = [lambda text=text: send(server.call, text) for text in (
        "fs.glob 'names/*a*a*a*a*a*a*a*b'",
        "fs.glob 'names/*a*a*a*a*a*a*a*.txt'",
        "fs.search x glob='**/*a*a*a*a*a*a*a*a*a*a*b'",
        "fs.glob '**/*a*a*a*a*a*a*a*a*a*a*a*a*?*[!b]'",
    )]
    (no_match, matching, search, classes), latencies = await under_attack(server.call, attacks)
    assert "0 files match" in no_match[0], no_match
    assert f"names/{LONG_NAME}" in matching[0], matching
    assert search[0].startswith("fs.search: 0 matches in 0 files"), search
    assert f"names/{LONG_NAME}" in classes[0], classes
    assert all(seconds < 5 for _, seconds in (no_match, matching, search, classes))
    assert_fast(latencies)


# -- constructs a linear-time engine lacks -----------------------------------------------------
UNSUPPORTED = {
    r"(a)\1": "backreference",
    r"(?P<x>a)(?P=x)": "backreference",
    "a(?=b)": "lookahead",
    "a(?!b)": "lookahead",
    "(?<=a)b": "lookbehind",
    "(?<!a)b": "lookbehind",
    "(?>a+)b": "atomic group",
    "a++b": "possessive quantifier",
    "(a)?(?(1)b|c)": "conditional",
    r"a\Z": r"\Z",
}


async def test_unsupported_constructs_are_refused_naming_them(servers):
    server = await servers()
    for pattern, construct in UNSUPPORTED.items():
        answer = await server.call("_cleveragents/plan/use", {
            "action_name": "replace", "arguments": {"pattern": pattern, "replacement": "x", "glob": "src/*"}})
        assert answer.get("error", {}).get("code") == INVALID_PARAMS, (pattern, answer)
        text = json.dumps(answer["error"]["data"])
        assert construct in text, (pattern, answer["error"])
        # the local actor says the same in its reply
        reply, _ = await send(server.call, f"fs.search '{pattern}' glob=src/long.py")
        assert reply.startswith("fs.search refused") and construct in reply, (pattern, reply)
    bad_group = await server.call("_cleveragents/plan/use", {
        "action_name": "replace", "arguments": {"pattern": "(a)", "replacement": r"\2", "glob": "src/*"}})
    assert bad_group["error"]["code"] == INVALID_PARAMS, bad_group
    assert "group" in json.dumps(bad_group["error"]["data"]), bad_group


# -- huge match counts and giant lines ---------------------------------------------------------
async def test_huge_match_counts_stop_at_the_cap(servers):
    server = await servers()
    attacks = [lambda text=text: send(server.call, text) for text in (
        "fs.search a glob=giant.txt max_results=10000",
        "fs.search 'x*' glob=giant.txt max_results=10000",
        "fs.search . glob=big/** max_results=10000",
    )]
    results, latencies = await under_attack(server.call, attacks)
    for reply, seconds in results:
        assert reply.startswith("fs.search: 10000 matches"), reply[:200]
        assert '"truncated": true' in reply or "(truncated)" in reply, reply[-200:]
        assert len(reply) < 64 * 1024, "the reply is bounded"
        assert seconds < 10, f"{seconds:.1f} s"
    assert_fast(latencies)


# -- many heavy searches at once ---------------------------------------------------------------
async def _keep_searching(call: Call, stop: asyncio.Event, done: list[float]) -> None:
    while not stop.is_set():
        reply, seconds = await send(call, HEAVY_SEARCH)
        assert reply.startswith(f"fs.search: 0 matches in {BIG_FILES} files"), reply
        done.append(seconds)


@pytest.mark.parametrize("kind", ["stdio", "http"])
async def test_many_concurrent_heavy_searches_leave_the_health_check_fast(servers, kind):
    server = await servers(kind)
    stop, done = asyncio.Event(), []
    workers = [asyncio.ensure_future(_keep_searching(server.call, stop, done)) for _ in range(4)]
    await asyncio.sleep(0.2)
    try:
        latencies = await health_latencies(server.call, samples=150)
    finally:
        stop.set()
        await asyncio.wait_for(asyncio.gather(*workers), 120)
    assert len(done) >= 4, "the searches ran while the health check was sampled"
    assert_fast(latencies)


# -- huge answers ------------------------------------------------------------------------------
async def test_a_huge_diff_is_encoded_without_stalling_the_server(servers):
    # Over HTTP: on stdio every answer shares one pipe, so a health answer written after
    # megabytes of diff waits for the client to read them, however idle the server is.
    server = await servers("http")
    plan = await server.call("_cleveragents/plan/use", {
        "action_name": "replace", "automation_profile": "autonomous",
        "arguments": {"pattern": "é", "replacement": "è", "glob": "wide/*"}})
    plan_id = plan["result"]["plan_id"]
    executed = await server.call("_cleveragents/plan/execute", {"plan_id": plan_id})
    assert executed["result"]["state"] == "completed", executed

    (answer,), latencies = await under_attack(
        server.call, [lambda: server.call("_cleveragents/plan/diff", {"plan_id": plan_id})])
    assert len(answer["raw"]) > 12 * 1024 * 1024 and b'"diff":' in answer["raw"], "the answer is as big as meant"
    assert_fast(latencies)


# -- time limits -------------------------------------------------------------------------------
async def test_a_tool_past_its_time_limit_fails_naming_the_limit(servers):
    server = await servers("stdio", CLEVERAGENTS_TOOL_TIMEOUT="0.01")
    plan = await server.call("_cleveragents/plan/use", {
        "action_name": "replace", "automation_profile": "autonomous",
        "arguments": {"pattern": "[a-z]+_never_[0-9]+", "replacement": "x", "glob": "big/**"}})
    plan_id = plan["result"]["plan_id"]
    answer = await server.call("_cleveragents/plan/execute", {"plan_id": plan_id})
    error = answer.get("error")
    assert error is not None and error["code"] == BUDGET_EXCEEDED, answer
    assert error["data"]["limit"] == "tool_timeout" and error["data"]["seconds"] == 0.01, error
    assert error["data"]["tool"] == "fs.replace", error
    status = (await server.call("_cleveragents/plan/status", {"plan_id": plan_id}))["result"]
    assert (status["phase"], status["state"]) == ("execute", "failed"), status
    tree = (await server.call("_cleveragents/plan/tree", {"plan_id": plan_id}))["result"]
    (decision,) = tree["decisions"]
    explained = (await server.call("_cleveragents/plan/explain", {
        "plan_id": plan_id, "decision_id": decision["decision_id"]}))["result"]
    assert explained["outcome"] == "failed", explained
    assert explained["error"]["type"] == "ToolTimeoutError", explained["error"]
    assert explained["error"]["data"] == {"limit": "tool_timeout", "seconds": 0.01, "tool": "fs.replace"}
    # An agent task's tool has the same limit, and says so.
    reply, _ = await send(server.call, HEAVY_SEARCH)
    assert reply.startswith("fs.search refused") and "tool_timeout" in reply, reply
