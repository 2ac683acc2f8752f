"""A full disk under a real stdio server: the workspace's filesystem during a plan's
apply, then the state database's during task writes.

Each write fails with a JSON-RPC error naming the cause (no bare "Internal error"),
nothing is half-applied, the server keeps serving, and once space returns the same
operations succeed. The filesystems are small tmpfs mounts (root only); without the
right to mount that test is skipped. A second test needs no privilege: it lowers the
server's file size limit (RLIMIT_FSIZE, through prlimit) so the apply's writes fail
with EFBIG, and raises it again.
"""

from __future__ import annotations

import itertools
import json
import os
import resource
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.rawclient import RawServer

SIZE = "4m"
FILES = 20
BODY = b"z" * 60_000  # 20 files of 60 kB
GROWTH = 30_000  # the apply makes each file this much longer: 600 kB more in all
REPLACE = {"pattern": "foo", "replacement": "bar" + "r" * GROWTH}
TEMP_MARKER = ".cleveragents-tmp-"
INTERNAL_ERROR = -32603
PLAN_ERROR = -32008


def mount_tmpfs(target: Path) -> None:
    target.mkdir()
    if shutil.which("mount") is None:
        pytest.skip("no mount command")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SIZE}", "tmpfs", str(target)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.strip() or done.returncode}")


@pytest.fixture
def small_disks(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """Two small filesystems: one for the workspace, one for the state directory."""
    mounted = []
    try:
        for name in ("workspace-fs", "state-fs"):
            mount_tmpfs(tmp_path / name)
            mounted.append(tmp_path / name)
        yield mounted[0], mounted[1]
    finally:
        for target in mounted:
            subprocess.run(["umount", "-l", str(target)], capture_output=True)


class Filler:
    """Fills a filesystem to the last byte, and gives the space back."""

    def __init__(self, root: Path):
        self.path = root / "filler"

    def fill(self, leave: int = 0) -> None:
        """Fill the disk, then free ``leave`` bytes again."""
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            for size in (1 << 20, 1 << 12, 1):
                try:
                    while True:
                        os.write(fd, b"\0" * size)
                except OSError as exc:
                    assert exc.errno == 28, exc
        finally:
            os.close(fd)
        assert os.statvfs(self.path.parent).f_bavail == 0
        if leave:
            os.truncate(self.path, self.path.stat().st_size - leave)

    def release(self) -> None:
        self.path.unlink()


class Client:
    def __init__(self, server: RawServer):
        self.server = server
        self.ids = itertools.count(1)

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        return await self.server.request(next(self.ids), method, params)

    async def result(self, method: str, **params: Any) -> Any:
        response = await self.call(method, **params)
        assert "result" in response, (method, response)
        return response["result"]

    async def send(self, text: str) -> dict[str, Any]:
        return await self.call("SendMessage", message={"role": "ROLE_USER", "messageId": text, "parts": [{"text": text}]})


def words(workspace: Path) -> set[bytes]:
    return {(workspace / f"f{i:02d}.txt").read_bytes()[:3] for i in range(FILES)}


def temp_files(root: Path) -> list[str]:
    return [str(p) for p in root.rglob(f"*{TEMP_MARKER}*")]


def assert_names_the_cause(error: dict[str, Any], detail: dict[str, Any]) -> None:
    assert error["code"] == INTERNAL_ERROR, error
    assert "no space left" in error["message"], error
    text = json.dumps(error)
    for key, value in detail.items():
        assert f'"{key}": "{value}"' in text, error
    assert "/" not in error["message"], f"a path leaked: {error}"


async def test_a_full_disk_fails_writes_clearly_and_recovers(small_disks):
    workspace_fs, state_fs = small_disks
    workspace, state = workspace_fs / "workspace", state_fs / "state"
    workspace.mkdir()
    for i in range(FILES):
        (workspace / f"f{i:02d}.txt").write_bytes(b"foo\n" + BODY)
    server = await RawServer.start("--workspace", str(workspace), "--state-dir", str(state))
    try:
        await server.initialize()
        client = Client(server)
        assert "result" in await client.send("before")
        plan = await client.result("_cleveragents/plan/use", action_name="replace",
                                   arguments=REPLACE)
        plan_id = plan["plan_id"]
        assert (await client.result("_cleveragents/plan/execute", plan_id=plan_id))["state"] == "input-required"

        # 1. The workspace's disk is full before the apply, then fills up in its middle
        # (room for about five of the twenty files to grow): each time the apply fails,
        # is undone, and can be tried again.
        workspace_filler = Filler(workspace_fs)
        for leave, failed_at in ((0, {"f00.txt"}), (len(BODY) + 5 * GROWTH, {f"f{i:02d}.txt" for i in range(3, 10)})):
            workspace_filler.fill(leave)
            refused = await client.call("_cleveragents/plan/apply", plan_id=plan_id)
            assert refused["error"]["code"] == PLAN_ERROR, refused
            assert refused["error"]["data"]["reason"] == "No space left on device", refused
            assert refused["error"]["data"]["path"] in failed_at, refused
            assert words(workspace) == {b"foo"}, f"a half-applied workspace (room left: {leave})"
            assert temp_files(workspace_fs) == []
            assert "result" in await client.send("state still writable")
            workspace_filler.release()
            status = await client.result("_cleveragents/plan/status", plan_id=plan_id)
            assert (status["phase"], status["state"]) == ("apply", "failed"), status
            assert "undone" in status["reason"] and "apply" in status["allowed_actions"], status

        # 2. The state's disk is full: task writes fail, reads still work.
        state_filler = Filler(state_fs)
        state_filler.fill()
        for _ in range(3):
            refused = await client.send("no room")
            assert "error" in refused, refused
            assert_names_the_cause(refused["error"], {"reason": "RESOURCE_EXHAUSTED"})
        refused = await client.call("_cleveragents/plan/apply", plan_id=plan_id)
        assert "error" in refused, refused
        assert_names_the_cause(refused["error"], {"reason": "storage_full"})
        assert words(workspace) == {b"foo"}, "files changed by an apply the state could not record"
        assert (await client.result("_cleveragents/health/check"))["status"] == "ok"
        assert (await client.result("ListTasks"))["totalSize"] == 3
        state_filler.release()

        # 3. Space is back: the same operations work.
        applied = await client.result("_cleveragents/plan/apply", plan_id=plan_id)
        assert len(applied["files"]) == FILES
        assert words(workspace) == {b"bar"}
        assert "result" in await client.send("after")
        assert (await client.result("ListTasks"))["totalSize"] == 4
    finally:
        await server.kill()
    with sqlite3.connect(state / "state.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


async def test_a_file_size_limit_fails_the_apply_clearly_and_recovers(tmp_path):
    if not hasattr(resource, "prlimit"):
        pytest.skip("resource.prlimit is not available on this platform")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    for i in range(FILES):
        (workspace / f"f{i:02d}.txt").write_bytes(b"foo\n" + BODY)
    # In memory: the limit then meets only files (SQLite's own writes under it fail
    # with an I/O error or not, depending on the size its write-ahead log has reached).
    server = await RawServer.start("--workspace", str(workspace), "--memory")
    try:
        await server.initialize()
        client = Client(server)
        plan_id = (await client.result("_cleveragents/plan/use", action_name="replace", arguments=REPLACE))["plan_id"]
        assert (await client.result("_cleveragents/plan/execute", plan_id=plan_id))["state"] == "input-required"
        unlimited = resource.prlimit(server.proc.pid, resource.RLIMIT_FSIZE)
        # Big enough for the journal, too small for any of the new files.
        resource.prlimit(server.proc.pid, resource.RLIMIT_FSIZE, (len(BODY) // 2, unlimited[1]))
        refused = await client.call("_cleveragents/plan/apply", plan_id=plan_id)
        assert refused["error"]["code"] == PLAN_ERROR, refused
        assert (refused["error"]["data"]["path"], refused["error"]["data"]["reason"]) == ("f00.txt", "File too large")
        assert words(workspace) == {b"foo"} and temp_files(workspace) == []
        assert (await client.result("_cleveragents/health/check"))["status"] == "ok"

        resource.prlimit(server.proc.pid, resource.RLIMIT_FSIZE, unlimited)
        applied = await client.result("_cleveragents/plan/apply", plan_id=plan_id)
        assert len(applied["files"]) == FILES and words(workspace) == {b"bar"}
    finally:
        await server.kill()
