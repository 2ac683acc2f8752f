"""Who runs the server in an attack test: root, and an unprivileged user the test makes.

CI runs as root, and most users don't, so every attack in ``tests/security`` that spawns
a server runs it twice: once as the test process's own root, once as
``cleveragents-test``, a system user created here with ``useradd``. Run as a normal
user, the suite keeps the unprivileged case (as that user) and skips the root one.

An unprivileged user can't reach the interpreter of a venv whose Python lives under
``/root`` (mode 700). Then it runs the system Python of the same minor version, with the
venv's site-packages and ``server/`` on ``PYTHONPATH``: the compiled wheels are built
for that ABI. Under ``CI=true`` an unusable unprivileged identity fails the test;
elsewhere it skips with the reason.
"""

from __future__ import annotations

import functools
import os
import pwd
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO

USER = "cleveragents-test"
IDENTITIES = ("root", "unprivileged")
_IMPORT_CHECK = "import cleveragents.transports.lsp.main, pygls, pydantic"


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def unavailable(reason: str) -> None:
    """Skip, or fail under CI, where every identity must run."""
    if in_ci():
        pytest.fail(f"CI=true needs this identity: {reason}")
    pytest.skip(reason)


@dataclass
class Identity:
    """A user to run server processes as. ``home`` is a fresh home directory of theirs
    holding decoy secrets (``~/.ssh/id_rsa``, ``~/.aws/credentials``, ``~/.netrc``, ...),
    each with the text ``SECRET-<name>`` so a test can look for it in any output."""

    name: str
    uid: int
    gid: int
    base: Path  # a directory only this identity (and root) can enter; removed at teardown
    python: list[str]
    env: dict[str, str] = field(default_factory=dict)

    @property
    def home(self) -> Path:
        return self.base / "home"

    @property
    def privileged(self) -> bool:
        return self.uid == 0

    def directory(self, name: str) -> Path:
        """A new directory of theirs below ``base``."""
        path = self.base / name
        path.mkdir(parents=True)
        self.own(path)
        return path

    def own(self, path: Path) -> None:
        """Give ``path`` (and all below it) to this identity: files the test wrote as
        root become theirs, as they would be on a user's machine."""
        if os.geteuid() != 0 or self.uid == os.geteuid():
            return
        for root, dirs, files in os.walk(path):
            for name in (*dirs, *files):
                os.lchown(os.path.join(root, name), self.uid, self.gid)
        os.lchown(path, self.uid, self.gid)

    def popen_options(self) -> dict[str, Any]:
        """``subprocess.Popen`` keywords that start a process as this identity."""
        env = {**os.environ, **self.env, "HOME": str(self.home)}
        if self.uid == os.geteuid():
            return {"env": env}
        return {"env": env, "user": self.uid, "group": self.gid, "extra_groups": []}

    def server_command(self, module: str = "cleveragents.transports.lsp") -> list[str]:
        return [*self.python, "-m", module]

    def run(self, argv: Sequence[str], **options: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=60,
                              **{**self.popen_options(), **options})


def plant_secrets(home: Path) -> dict[str, Path]:
    """Decoy secrets in ``home``, as a developer's machine has them."""
    secrets = {
        "ssh": home / ".ssh" / "id_rsa",
        "aws": home / ".aws" / "credentials",
        "netrc": home / ".netrc",
        "config": home / ".config" / "gh" / "hosts.yml",
    }
    for name, path in secrets.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"SECRET-{name}\n")
        path.chmod(0o600)
    return secrets


@functools.cache
def _test_user() -> tuple[int, int]:
    """The unprivileged user's uid and gid, made on first use (root only)."""
    try:
        entry = pwd.getpwnam(USER)
    except KeyError:
        useradd = shutil.which("useradd") or "/usr/sbin/useradd"
        done = subprocess.run([useradd, "--system", "--user-group", "--no-create-home",
                               "--shell", "/usr/sbin/nologin", USER], capture_output=True, text=True)
        if done.returncode not in (0, 9):  # 9: made meanwhile by another run
            raise RuntimeError(f"useradd failed: {done.stderr.strip()}") from None
        entry = pwd.getpwnam(USER)
    return entry.pw_uid, entry.pw_gid


def _python_for(uid: int, gid: int) -> tuple[list[str], dict[str, str]] | str:
    """An interpreter the user can start that imports the project, with its extra
    environment; or why there is none."""
    options: dict[str, Any] = {} if uid == os.geteuid() else {"user": uid, "group": gid, "extra_groups": []}
    candidates: list[tuple[list[str], dict[str, str]]] = [([sys.executable], {})]
    system = shutil.which(f"python{sys.version_info.major}.{sys.version_info.minor}", path="/usr/bin:/usr/local/bin")
    if system:
        path = os.pathsep.join([str(REPO / "server"), sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
        candidates.append(([system], {"PYTHONPATH": path, "PYTHONNOUSERSITE": "1"}))
    errors = []
    for python, extra in candidates:
        try:
            done = subprocess.run([*python, "-c", _IMPORT_CHECK], capture_output=True, text=True, timeout=60,
                                  cwd="/", env={**os.environ, **extra}, **options)
        except OSError as exc:
            errors.append(f"{python[0]}: {exc}")
            continue
        if done.returncode == 0:
            return python, extra
        errors.append(f"{python[0]}: {done.stderr.strip().splitlines()[-1:]}")
    return "no interpreter this user can run imports the project: " + "; ".join(errors)


@functools.cache
def _python_cached(uid: int, gid: int) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]] | str:
    found = _python_for(uid, gid)
    if isinstance(found, str):
        return found
    python, extra = found
    return tuple(python), tuple(sorted(extra.items()))


def identity_for(name: str) -> Iterator[Identity]:
    """The identity ``name`` ("root" or "unprivileged") with a fresh base directory,
    removed afterwards; skips (fails under CI) where it can't be had."""
    if name == "root":
        if os.geteuid() != 0:
            pytest.skip("the root identity needs a test run as root")
        uid, gid = 0, 0
    elif os.geteuid() == 0:
        try:
            uid, gid = _test_user()
        except (OSError, RuntimeError) as exc:
            unavailable(f"can't create the user {USER}: {exc}")
    else:
        uid, gid = os.geteuid(), os.getegid()
    found = _python_cached(uid, gid)
    if isinstance(found, str):
        unavailable(found)
    python, extra = found
    base = Path(tempfile.mkdtemp(prefix=f"cleveragents-{name}-"))
    identity = Identity(name, uid, gid, base, list(python), dict(extra))
    try:
        identity.own(base)
        home = identity.directory("home")
        plant_secrets(home)
        identity.own(home)
        yield identity
    finally:
        shutil.rmtree(base, ignore_errors=True)
