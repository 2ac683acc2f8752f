"""Slow and idle clients against ``agents serve --http``, on real sockets.

Hundreds of connections that send a request head one byte at a time (slowloris),
that send nothing, or that never finish a body: each is cut off within its bound,
and a normal client is served at once all the while, even with the connection limit
reached.
"""

from __future__ import annotations

import select
import socket
import time

import httpx

from tests.security.http_process import HttpProcess

SLOW = 400
IDLE = 50
LIMIT = 64
HEADER_TIMEOUT = 2.0
BODY_TIMEOUT = 2.0
SLACK = 3.0  # a loaded machine's scheduling, on top of each bound


def _open(port: int, count: int, first: bytes) -> list[socket.socket]:
    sockets = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        if first:
            sock.sendall(first)
        sock.setblocking(False)
        sockets.append(sock)
    return sockets


def _closed(sock: socket.socket) -> bool:
    """Whether the server closed it (EOF or a reset, after any answer it sent)."""
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                return True
    except BlockingIOError:
        return False
    except OSError:
        return True


def _trickle(sockets: list[socket.socket]) -> None:
    """One more header byte on every socket still open (the slowloris step)."""
    for sock in sockets:
        try:
            sock.send(b"x")
        except OSError:
            pass


def _wait_all_closed(sockets: list[socket.socket], bound: float, trickle: bool) -> float:
    start = time.monotonic()
    open_ = list(sockets)
    while open_:
        assert time.monotonic() - start < bound, f"{len(open_)} of {len(sockets)} still open after {bound}s"
        select.select(open_, [], [], 0.25)
        open_ = [s for s in open_ if not _closed(s)]
        if trickle:
            _trickle(open_)
    return time.monotonic() - start


def _served(client: httpx.Client) -> float:
    started = time.monotonic()
    answer = client.get("/healthz")
    assert answer.status_code == 200 and answer.json() == {"status": "ok"}
    return time.monotonic() - started


def _slow_bodies_leave_room(server: HttpProcess, path: str, credential: str, answered: int = 0) -> list[socket.socket]:
    """Past the connection limit, connections that send a body slowly to ``path`` (with
    the ``credential`` header line, if any); a normal client is served at once all the
    while, on a new connection each time, which one of those must make room for. With
    ``answered``, the normal client comes once that many have their answer: until the
    server has refused a request, it is one being served, and a burst of them on a
    loaded machine can hold every slot for a moment."""
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n{credential}"
            "Content-Type: application/json\r\nContent-Length: 60000\r\n\r\n{").encode()
    slow = _open(server.port, LIMIT + 16, head)
    _trickle(slow)
    ends = time.monotonic() + 10
    while len(select.select(slow, [], [], 0.25)[0]) < answered:
        assert time.monotonic() < ends, f"fewer than {answered} of the slow requests were answered"
        _trickle(slow)
    took = []
    for _ in range(5):
        with httpx.Client(base_url=server.url, timeout=5) as fresh:
            took.append(_served(fresh))
        _trickle(slow)
    assert max(took) < 2.0, (path, took)
    return slow


def test_slowloris_and_idle_connections_are_cut_off_and_normal_clients_are_served(identity):
    args = ("--auth-token", "tok-slow", "--header-timeout", str(HEADER_TIMEOUT), "--body-timeout", str(BODY_TIMEOUT),
            "--max-connections", str(LIMIT))
    with HttpProcess(identity, *args) as server:
        head = f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nX-Slow: ".encode()
        opened = time.monotonic()
        slow = _open(server.port, SLOW, head)
        idle = _open(server.port, IDLE, b"")
        _trickle(slow)
        # Far more than the limit wait for their heads; a normal client is still served, at once.
        with httpx.Client(base_url=server.url, timeout=5) as client:
            took = [_served(client) for _ in range(5)]
        with httpx.Client(base_url=server.url, timeout=5) as fresh:  # a new connection each time
            took += [_served(fresh) for _ in range(3)]
        assert max(took) < 2.0, took
        _wait_all_closed(slow + idle, HEADER_TIMEOUT + SLACK + (time.monotonic() - opened), trickle=True)
        for sock in slow + idle:
            sock.close()


def test_below_the_limit_the_head_timeout_cuts_slow_and_idle_clients(identity):
    args = ("--auth-token", "tok-slow", "--header-timeout", str(HEADER_TIMEOUT), "--max-connections", str(LIMIT))
    with HttpProcess(identity, *args) as server:
        head = f"POST /a2a HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n".encode()
        slow = _open(server.port, 20, head)
        idle = _open(server.port, 20, b"")
        time.sleep(HEADER_TIMEOUT / 2)
        assert not any(_closed(s) for s in slow + idle)  # not before the bound
        _trickle(slow)
        took = _wait_all_closed(slow + idle, HEADER_TIMEOUT + SLACK, trickle=True)
        assert took > HEADER_TIMEOUT / 4
        answers = []
        for sock in slow:  # a slow head that sent something is told why
            sock.setblocking(True)
            sock.settimeout(0.1)
            try:
                answers.append(sock.recv(200))
            except OSError:
                answers.append(b"")
            sock.close()
        for sock in idle:
            sock.close()
        # A keep-alive connection that goes slow after its first request is cut too.
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
            sock.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n".encode())
            assert b" 200 " in sock.recv(4096)
            sock.sendall(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n".encode())
            sock.setblocking(False)
            _wait_all_closed([sock], HEADER_TIMEOUT + SLACK, trickle=True)


def test_a_body_that_never_finishes_is_cut_off(identity):
    args = ("--auth-token", "tok-slow", "--body-timeout", str(BODY_TIMEOUT))
    with HttpProcess(identity, *args) as server:
        head = (f"POST /a2a HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nAuthorization: Bearer tok-slow\r\n"
                "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n{").encode()
        slow = _open(server.port, 30, head)
        _wait_all_closed(slow, BODY_TIMEOUT + SLACK, trickle=True)
        for sock in slow:
            sock.close()
        with httpx.Client(base_url=server.url, timeout=5) as client:
            _served(client)
        assert "Traceback" not in server.stderr()


def test_callers_without_a_credential_sending_slow_bodies_hold_no_connection(identity):
    """A caller with no credential is answered 401, after reading its body only far
    enough to echo the request's id. A body sent slowly must not keep the connection
    as one being served (those are never made room from) for the body's whole timeout:
    a few hundred such callers, who need no token, would leave everyone else 503."""
    args = ("--auth-token", "tok-slow", "--body-timeout", "60", "--max-connections", str(LIMIT))
    with HttpProcess(identity, *args) as server:
        slow = _slow_bodies_leave_room(server, "/a2a", "")
        for sock in slow:
            sock.close()
        with httpx.Client(base_url=server.url, timeout=5) as client:  # with its body at once, its id is echoed
            refused = client.post("/a2a", json={"jsonrpc": "2.0", "id": 7, "method": "ListTasks", "params": {}})
        assert refused.status_code == 401 and refused.json()["id"] == 7


def test_a_caller_with_a_credential_holds_at_most_its_share_of_slow_bodies(identity):
    """A body being read is a request being served, which the connection limit never
    makes room from: one caller with a token sending slow bodies on every connection
    would leave everyone else none. Past its share, its requests are refused 429
    before their bodies are read, and their connections closed."""
    from cleveragents.transports.http.body_reads import MAX_BODY_READS

    assert MAX_BODY_READS < LIMIT
    args = ("--auth-token", "tok-slow", "--body-timeout", "60", "--max-connections", str(LIMIT))
    with HttpProcess(identity, *args) as server:
        answered: list[bytes] = []
        for path in ("/a2a", "/message:send"):
            slow = _slow_bodies_leave_room(server, path, "Authorization: Bearer tok-slow\r\n",
                                           answered=LIMIT - MAX_BODY_READS)
            for sock in slow:
                try:
                    answer = sock.recv(65536)
                except OSError:
                    answer = b""
                if answer.startswith(b"HTTP/1.1 429"):  # its body unread, it can carry no other request
                    sock.setblocking(True)
                    sock.settimeout(5)
                    try:
                        closed = not sock.recv(65536)
                    except TimeoutError:
                        closed = False
                    except OSError:  # reset
                        closed = True
                    answered.append(answer + (b" [closed]" if closed else b" [open]"))
                sock.close()
        assert answered and all(b"Too many requests" in a and a.endswith(b"[closed]") for a in answered), answered[:3]
        assert "Traceback" not in server.stderr()


def test_the_defaults_bound_every_connection():
    from cleveragents.transports.http.connections import HttpLimits

    limits = HttpLimits()
    assert 0 < limits.header_timeout <= 30 and 0 < limits.body_timeout <= 300
    assert 0 < limits.keep_alive_timeout <= 30 and 0 < limits.max_connections <= 4096
