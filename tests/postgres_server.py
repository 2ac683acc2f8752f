"""A real PostgreSQL server for the tests, started once per test session.

Debian's ``postgresql`` package provides the binaries (installed when missing and the
tests run as root, as CI does: ``tests/system_packages.py``). The server lives in a
temporary directory: ``initdb`` there, ``postgres`` on a free loopback port and a unix
socket in the same directory, then stopped and removed when the session ends. PostgreSQL
refuses to run as root, so as root it runs as Debian's ``postgres`` user (or a system
user made here when there is none).

Each test that wants a store gets a database of its own (``new_database``). Where the
server can't be started the test skips with the reason; under ``CI=true`` it fails.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import glob
import itertools
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.system_packages import _in_ci, require_debian_packages

SUPERUSER = "cleveragents"
START_TIMEOUT = 60.0
_FALLBACK_USER = "cleveragents-pg"


@dataclass
class PostgresServer:
    process: subprocess.Popen[bytes]
    root: Path
    port: int
    bin_dir: Path
    _names: itertools.count[int]

    @property
    def admin_url(self) -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/postgres"

    def url(self, database: str) -> str:
        return f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A fresh, empty database; its URL."""
        import psycopg

        name = f"test_{os.getpid()}_{next(self._names)}"
        with psycopg.connect(self.admin_url, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
        return self.url(name)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # "fast" shutdown: ends the sessions, then stops
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.root, ignore_errors=True)


def _bin_dir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4]))
    return Path(found[-1]).parent if found else None


def _run_as() -> tuple[int, int]:
    """Who runs the server: this process, or an unprivileged user when it is root."""
    if os.geteuid() != 0:
        return os.geteuid(), os.getegid()
    for name in ("postgres", _FALLBACK_USER):
        with contextlib.suppress(KeyError):
            entry = pwd.getpwnam(name)
            return entry.pw_uid, entry.pw_gid
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"
    done = subprocess.run([useradd, "--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin",
                           _FALLBACK_USER], capture_output=True, text=True)
    if done.returncode not in (0, 9):  # 9: made meanwhile
        raise RuntimeError(f"useradd failed: {done.stderr.strip()}")
    entry = pwd.getpwnam(_FALLBACK_USER)
    return entry.pw_uid, entry.pw_gid


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _start(bin_dir: Path) -> PostgresServer:
    uid, gid = _run_as()
    root = Path(tempfile.mkdtemp(prefix="cleveragents-pg-"))
    os.chown(root, uid, gid)
    as_user: dict[str, object] = {} if uid == os.geteuid() else {"user": uid, "group": gid, "extra_groups": []}
    env = {**os.environ, "LC_ALL": "C", "TZ": "UTC"}
    done = subprocess.run([str(bin_dir / "initdb"), "-D", str(root / "data"), "-U", SUPERUSER, "--auth=trust",
                           "-E", "UTF8", "--no-locale", "--no-sync"],
                          capture_output=True, text=True, cwd=root, env=env, timeout=120, **as_user)  # type: ignore[call-overload]
    if done.returncode != 0:
        shutil.rmtree(root, ignore_errors=True)
        raise RuntimeError(f"initdb failed: {done.stderr.strip()[-500:]}")
    for _ in range(5):  # a free port may be taken before the server binds it
        port = _free_port()
        log = open(root / "server.log", "ab")  # noqa: SIM115 (the server writes it until it stops)
        process = subprocess.Popen(
            [str(bin_dir / "postgres"), "-D", str(root / "data"), "-p", str(port), "-k", str(root),
             "-c", "listen_addresses=127.0.0.1", "-c", "max_connections=300",
             # The tests don't survive a power cut: no need to wait for the disk.
             "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"],
            stdout=log, stderr=log, stdin=subprocess.DEVNULL, cwd=root, env=env, start_new_session=True,
            **as_user)  # type: ignore[call-overload]
        log.close()
        server = PostgresServer(process, root, port, bin_dir, itertools.count())
        if _ready(server):
            atexit.register(server.stop)  # also when the session ends without its teardown
            return server
        server.process.kill()
        server.process.wait()
    tail = (root / "server.log").read_text(errors="replace")[-800:]
    shutil.rmtree(root, ignore_errors=True)
    raise RuntimeError(f"postgres did not start: {tail}")


def _ready(server: PostgresServer) -> bool:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            return False
        done = subprocess.run([str(server.bin_dir / "pg_isready"), "-h", "127.0.0.1", "-p", str(server.port)],
                              capture_output=True)
        if done.returncode == 0:
            return True
        time.sleep(0.1)
    return False


_LOCK = threading.Lock()


@functools.cache
def _server() -> PostgresServer | str:
    """The session's server, or why there is none."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "needs psycopg: pip install -e '.[postgresql]'"
    bin_dir = _bin_dir()
    if bin_dir is None:
        return "the PostgreSQL server binaries are not installed (apt-get install postgresql)"
    try:
        return _start(bin_dir)
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        return f"PostgreSQL could not be started: {exc}"


def running_server() -> PostgresServer | str:
    """The session's server, started on first use, or why there is none (for scripts)."""
    with _LOCK:
        return _server()


def require_postgres() -> PostgresServer:
    """The session's running server; skips (fails under ``CI=true``) when there is none."""
    if _bin_dir() is None:
        require_debian_packages("postgresql")
    with _LOCK:
        server = _server()
    if isinstance(server, str):
        if _in_ci():
            pytest.fail(server)
        pytest.skip(server)
    return server


def stop_postgres() -> None:
    """At the session's end: stop the server if one was started."""
    if _server.cache_info().currsize:
        server = _server()
        if isinstance(server, PostgresServer):
            server.stop()
