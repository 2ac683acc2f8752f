"""Apply and rollback against a workspace that changes under them, through a real
stdio server run as root and as an unprivileged user.

A thread swaps the plan's directories for symlinks to look-alike copies outside the
workspace (and back) while a 400-file apply, or its rollback, runs. Whatever moment a
swap lands on, no byte may change outside the workspace, and the operation is all or
nothing: it completes with every file written in the workspace, or fails, undone, with
the workspace as it was. A mode changed between execute and apply (or between apply
and rollback) is a conflict, as a content change is.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import random
import shutil
import stat
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.rawclient import RawServer
from tests.security.identities import Identity

PLAN = "_cleveragents/plan/"
CONFLICT = -32008
FORBIDDEN = -32003
ROUNDS = 10
DIRECTORIES = 20
FILES = 400
REPLACE = {"pattern": "foo", "replacement": "bar", "glob": "d*/*.txt"}
TEMP_MARKER = ".cleveragents-tmp-"
# The plan's (phase, state) after each outcome: a refusal over conflicts leaves it where it was.
STATUS_AFTER = {
    ("apply", "completed"): ("apply", "completed"), ("apply", "refused"): ("apply", "failed"),
    ("apply", "conflict"): ("execute", "input-required"), ("apply", "undone"): ("apply", "failed"),
    ("rollback", "completed"): ("rollback", "completed"), ("rollback", "refused"): ("rollback", "failed"),
    ("rollback", "conflict"): ("apply", "completed"), ("rollback", "undone"): ("rollback", "failed"),
}
HOLD = ".hold-"


class Client:
    def __init__(self, server: RawServer):
        self.server = server
        self.ids = itertools.count(1)

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        return await self.server.request(next(self.ids), PLAN + method, params)

    async def result(self, method: str, **params: Any) -> dict[str, Any]:
        response = await self.call(method, **params)
        assert "result" in response, (method, response)
        return response["result"]

    async def executed(self, arguments: dict[str, Any] = REPLACE, action: str = "replace") -> str:
        plan = await self.result("use", action_name=action, arguments=arguments, automation_profile="supervised")
        executed = await self.result("execute", plan_id=plan["plan_id"])
        assert executed["state"] == "input-required", executed
        return plan["plan_id"]

    async def status(self, plan_id: str) -> tuple[str, str]:
        status = await self.result("status", plan_id=plan_id)
        return status["phase"], status["state"]


@pytest.fixture
async def serve(identity: Identity) -> AsyncIterator[Callable[[Path], Any]]:
    """Starts (and at the end kills) servers as ``identity``: ``await serve(workspace)``."""
    servers: list[RawServer] = []

    async def start(workspace: Path) -> Client:
        proc = await asyncio.create_subprocess_exec(
            *identity.server_command(), "--workspace", str(workspace), cwd="/",
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
            **identity.popen_options())
        server = RawServer(proc)
        servers.append(server)
        await server.initialize()
        return Client(server)

    yield start
    for server in servers:
        await server.kill()


def file_names() -> list[str]:
    return [f"d{i % DIRECTORIES:02d}/f{i:03d}.txt" for i in range(FILES)]


def fill(root: Path, word: bytes) -> None:
    for i, name in enumerate(file_names()):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(word + b" %d\n" % i)
        path.chmod(0o644)


def tree(root: Path) -> dict[str, Any]:
    """Every entry under ``root`` (but the state directory): bytes and mode, link targets."""
    out: dict[str, Any] = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if relative.parts[0] == ".cleveragents":
            continue
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            out[str(relative)] = ("link", os.readlink(path))
        elif stat.S_ISDIR(info.st_mode):
            out[str(relative)] = ("dir",)
        else:
            out[str(relative)] = ("file", path.read_bytes(), stat.S_IMODE(info.st_mode))
    return out


class Swapper(threading.Thread):
    """Swaps random directories of ``workspace`` for links to their copies in
    ``outside`` and back, as fast as it can, until stopped; every swap is undone."""

    def __init__(self, workspace: Path, outside: Path, seed: int):
        super().__init__(daemon=True)
        self.workspace, self.outside = workspace, outside
        self.random = random.Random(seed)
        self.stopping = threading.Event()
        self.swaps = 0

    def run(self) -> None:
        while not self.stopping.is_set():
            name = f"d{self.random.randrange(DIRECTORIES):02d}"
            real, held = self.workspace / name, self.workspace / (HOLD + name)
            os.rename(real, held)
            try:
                os.symlink(self.outside / name, real)
                self.swaps += 1
                time.sleep(self.random.choice((0, 0.0005, 0.002)))
                os.unlink(real)
            finally:
                os.rename(held, real)
            time.sleep(self.random.choice((0, 0.002, 0.01)))

    def stop(self) -> int:
        self.stopping.set()
        self.join(10)
        assert not self.is_alive(), "the swapper did not stop"
        return self.swaps


class Planter(Swapper):
    """Puts links to ``outside`` at the names of directories that do not exist yet
    (the ones a plan is about to make), and takes them away again."""

    def run(self) -> None:
        while not self.stopping.is_set():
            name = f"n{self.random.randrange(DIRECTORIES):02d}"
            try:
                os.symlink(self.outside / name, self.workspace / name)
            except FileExistsError:  # the apply made it first
                continue
            self.swaps += 1
            time.sleep(self.random.choice((0, 0.0005, 0.002)))
            os.unlink(self.workspace / name)
            time.sleep(self.random.choice((0, 0.002, 0.01)))


@pytest.fixture
def world(identity: Identity) -> dict[str, Path]:
    """A workspace of 400 files in 20 directories, and outside it a copy of each
    directory (writable by the server's user, so only the server can refuse)."""
    workspace, outside = identity.directory("workspace"), identity.directory("outside")
    fill(workspace, b"foo")
    fill(outside, b"foo")
    identity.own(workspace)
    identity.own(outside)
    return {"workspace": workspace, "outside": outside}


def reset(identity: Identity, workspace: Path, word: bytes) -> None:
    for path in workspace.iterdir():
        if path.name != ".cleveragents":
            shutil.rmtree(path)
    fill(workspace, word)
    identity.own(workspace)


async def during(swapper: Swapper, client: Client, method: str, plan_id: str) -> tuple[dict[str, Any], int]:
    """``method`` on ``plan_id`` while ``swapper`` runs; the response and the swap count."""
    swapper.start()
    try:
        response = await client.call(method, plan_id=plan_id)
    finally:
        swaps = swapper.stop()
    return response, swaps


def words(workspace: Path) -> set[bytes]:
    return {(workspace / name).read_bytes().split(b" ")[0] for name in file_names()}


def check_round(world: dict[str, Path], outside_before: dict[str, Any], response: dict[str, Any],
                done_word: bytes, undone_word: bytes, context: str) -> str:
    """The round's outcome: "completed"; refused before a file was written, for a
    link on the way ("refused") or for a directory missing mid-swap ("conflict"); or
    failed while writing and "undone"."""
    assert tree(world["outside"]) == outside_before, f"{context}: a file outside the workspace changed"
    workspace = world["workspace"]
    leftovers = [str(p) for p in workspace.rglob("*") if TEMP_MARKER in p.name or p.name.startswith(HOLD)]
    assert leftovers == [], f"{context}: left behind: {leftovers[:5]}"
    found = words(workspace)
    if "result" in response:
        assert found == {done_word}, f"{context}: reported {response['result']['state']} but the workspace holds {found}"
        return "completed"
    error = response["error"]
    assert found == {undone_word}, f"{context}: failed ({error}) but not undone: {found}"
    if (error["code"], error["data"].get("reason")) == (FORBIDDEN, "symlink_escape"):
        return "refused"
    if error["code"] == CONFLICT and "conflicts" in error["data"]:
        return "conflict"
    assert error["code"] == CONFLICT and "undone" in error["message"], f"{context}: {error}"
    return "undone"


async def test_a_directory_swapped_for_a_link_during_apply_never_leads_out(identity, serve, world):
    workspace = world["workspace"]
    outside_before = tree(world["outside"])
    client = await serve(workspace)
    outcomes = []
    for round_ in range(ROUNDS):
        plan_id = await client.executed()
        response, swaps = await during(Swapper(workspace, world["outside"], round_), client, "apply", plan_id)
        assert swaps > 0
        outcome = check_round(world, outside_before, response, b"bar", b"foo", f"round {round_}")
        assert await client.status(plan_id) == STATUS_AFTER["apply", outcome], outcome
        outcomes.append(outcome)
        reset(identity, workspace, b"foo")
    print(f"{identity.name}: apply outcomes {outcomes}")


async def test_a_directory_swapped_for_a_link_during_rollback_never_leads_out(identity, serve, world):
    workspace = world["workspace"]
    outside_before = tree(world["outside"])
    client = await serve(workspace)
    outcomes = []
    for round_ in range(ROUNDS):
        plan_id = await client.executed()
        applied = await client.call("apply", plan_id=plan_id)
        assert "result" in applied, applied
        assert words(workspace) == {b"bar"}
        response, swaps = await during(Swapper(workspace, world["outside"], round_), client, "rollback", plan_id)
        assert swaps > 0
        outcome = check_round(world, outside_before, response, b"foo", b"bar", f"round {round_}")
        assert await client.status(plan_id) == STATUS_AFTER["rollback", outcome], outcome
        if outcome != "completed":  # the rollback may be tried again, and then it succeeds
            again = await client.call("rollback", plan_id=plan_id)
            assert "result" in again, again
            assert words(workspace) == {b"foo"}
        outcomes.append(outcome)
        reset(identity, workspace, b"foo")
    print(f"{identity.name}: rollback outcomes {outcomes}")


def conflict_details(error: dict[str, Any]) -> dict[str, dict[str, Any]]:
    assert error["data"]["conflicts"] == [detail["path"] for detail in error["data"]["conflict_details"]], error
    return {detail["path"]: detail for detail in error["data"]["conflict_details"]}


async def test_a_mode_changed_between_execute_and_apply_is_a_conflict(identity, serve):
    workspace = identity.directory("workspace")
    (workspace / "a.txt").write_bytes(b"foo\n")
    (workspace / "a.txt").chmod(0o644)
    (workspace / "b.txt").write_bytes(b"foo\n")
    (workspace / "b.txt").chmod(0o644)
    identity.own(workspace)
    client = await serve(workspace)
    plan_id = await client.executed({"pattern": "foo", "replacement": "bar"})
    (workspace / "a.txt").chmod(0o755)

    refused = await client.call("apply", plan_id=plan_id)
    assert refused.get("error", {}).get("code") == CONFLICT, refused
    assert conflict_details(refused["error"]) == {
        "a.txt": {"path": "a.txt", "changed": ["mode"], "expected_mode": "0644", "found_mode": "0755"}}, refused
    assert (workspace / "a.txt").read_bytes() == b"foo\n" and (workspace / "b.txt").read_bytes() == b"foo\n"
    assert stat.S_IMODE((workspace / "a.txt").stat().st_mode) == 0o755

    # force writes the plan's content and keeps the mode the user gave the file.
    forced = await client.call("apply", plan_id=plan_id, force=True)
    assert "result" in forced, forced
    assert (workspace / "a.txt").read_bytes() == b"bar\n"
    assert stat.S_IMODE((workspace / "a.txt").stat().st_mode) == 0o755
    assert stat.S_IMODE((workspace / "b.txt").stat().st_mode) == 0o644

    # After the apply, a mode change is a conflict for the rollback too.
    (workspace / "b.txt").chmod(0o600)
    refused = await client.call("rollback", plan_id=plan_id)
    assert refused.get("error", {}).get("code") == CONFLICT, refused
    assert conflict_details(refused["error"]) == {
        "b.txt": {"path": "b.txt", "changed": ["mode"], "expected_mode": "0644", "found_mode": "0600"}}, refused
    assert (workspace / "b.txt").read_bytes() == b"bar\n"
    rolled = await client.call("rollback", plan_id=plan_id, force=True)
    assert "result" in rolled, rolled
    # The rollback restores the pre-images byte for byte, modes included.
    assert (workspace / "a.txt").read_bytes() == b"foo\n" and (workspace / "b.txt").read_bytes() == b"foo\n"
    assert stat.S_IMODE((workspace / "a.txt").stat().st_mode) == 0o755
    assert stat.S_IMODE((workspace / "b.txt").stat().st_mode) == 0o644


def creating_patch() -> str:
    """400 new files in 20 new directories ``nNN``."""
    return "".join(f"--- /dev/null\n+++ b/n{i % DIRECTORIES:02d}/f{i:03d}.txt\n@@ -0,0 +1 @@\n+new {i}\n"
                   for i in range(FILES))


async def test_a_link_planted_where_apply_makes_a_directory_never_leads_out(identity, serve, world):
    workspace, outside = world["workspace"], world["outside"]
    for i in range(DIRECTORIES):  # look-alike targets, so a write through a link would land
        (outside / f"n{i:02d}").mkdir()
    identity.own(outside)
    outside_before = tree(outside)
    workspace_before = tree(workspace)
    client = await serve(workspace)
    outcomes = []
    for round_ in range(ROUNDS):
        plan_id = await client.executed({"patch": creating_patch()}, action="apply-patch")
        response, swaps = await during(Planter(workspace, outside, round_), client, "apply", plan_id)
        assert swaps > 0
        context = f"round {round_}"
        assert tree(outside) == outside_before, f"{context}: a file outside the workspace changed"
        if "result" in response:
            outcomes.append("completed")
            for i in range(FILES):
                path = workspace / f"n{i % DIRECTORIES:02d}/f{i:03d}.txt"
                assert path.read_bytes() == b"new %d\n" % i, f"{context}: completed, but {path.name} is not there"
        else:
            error = response["error"]
            assert tree(workspace) == workspace_before, f"{context}: failed ({error}) but not undone"
            refused = (error["code"], error["data"].get("reason")) == (FORBIDDEN, "symlink_escape")
            assert refused or (error["code"] == CONFLICT and "undone" in error["message"]), f"{context}: {error}"
            outcomes.append("refused" if refused else "undone")
        assert await client.status(plan_id) == STATUS_AFTER["apply", outcomes[-1]], outcomes[-1]
        reset(identity, workspace, b"foo")
    print(f"{identity.name}: apply outcomes {outcomes}")
