"""``agents serve --http`` as a real process of an identity, on 127.0.0.1 and a free port.

Its stdout and stderr go to files (never pipes a test might not drain). Once it prints
``listening on http://HOST:PORT`` the URL is known, and so is the token it made when
no credential was configured (the indented ``token:`` line above it).
"""

from __future__ import annotations

import re
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

from tests.security.identities import Identity

LISTENING = re.compile(r"^listening on (http://(\S+):(\d+))$", re.M)
TOKEN = re.compile(r"^\s+token: (\S+)$", re.M)


class HttpProcess:
    def __init__(self, identity: Identity, *args: str, env: dict[str, str] | None = None, name: str = "ws"):
        self.identity = identity
        self.workspace = identity.directory(name)
        (self.workspace / "README.md").write_text("hello\n")
        identity.own(self.workspace)
        self.stdout_path = identity.base / f"{name}.stdout"
        self.stderr_path = identity.base / f"{name}.stderr"
        options = identity.popen_options()
        options["env"] = {**options["env"], **(env or {})}
        command = [*identity.server_command("cleveragents.cli.main"), "serve", "--http", "--workspace",
                   str(self.workspace), "--port", "0", *args]
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                            cwd=self.workspace, **options)
        deadline = time.monotonic() + 30
        while not (match := LISTENING.search(self.stderr())):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"the server did not start:\n{self.stderr()[-3000:]}")
            time.sleep(0.05)
        self.url, self.host, self.port = match.group(1), match.group(2), int(match.group(3))
        token = TOKEN.search(self.stderr())
        self.token = token.group(1) if token else None

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace")

    def auth(self, token: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {token or self.token}"}

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        return self.process.returncode

    def __enter__(self) -> HttpProcess:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def raw_request(port: int, head: str, body: bytes = b"", timeout: float = 10.0) -> tuple[int, bytes]:
    """Send ``head`` (request line and headers, without the blank line) and ``body`` on
    a fresh socket as written; the status and the whole answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(head.rstrip("\r\n").encode("latin-1") + b"\r\nConnection: close\r\n\r\n" + body)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    data = b"".join(chunks)
    return int(data.split(b" ", 2)[1]), data


def read_path(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else ""
