"""An HTTP server (a webhook, a key set's host) that takes each request, then answers it a
byte at a time: each byte comes well within any read's timeout, so only a limit on the
whole answer ends it."""

from __future__ import annotations

import socket
import threading

HTTP_HEAD = b"HTTP/1.1 200 OK\r\nX-Slow: "
# For https: the header of a TLS handshake record of 16 KiB, whose bytes then come one
# at a time; the client's handshake reads until the record is whole.
TLS_HEAD = b"\x16\x03\x03\x40\x00"


class DrippingWebhook:
    """On 127.0.0.1. After ``lasting`` seconds (None: never) it ends its answer, a 200
    (for ``https``, its handshake message then makes no sense)."""

    def __init__(self, every: float = 0.05, lasting: float | None = None, scheme: str = "http"):
        self.every, self.lasting, self.scheme = every, lasting, scheme
        self.accepted = 0
        self.cut_off = 0  # answers the poster gave up on: it closed the connection mid-answer
        self._stop = threading.Event()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.2)
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self._sock.getsockname()[1]}"

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                connection, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self._drip, args=(connection,), daemon=True).start()

    def _drip(self, connection: socket.socket) -> None:
        with connection:
            try:
                connection.recv(65536)  # the request (or TLS's first message), small
                connection.sendall(TLS_HEAD if self.scheme == "https" else HTTP_HEAD)
                drips = None if self.lasting is None else int(self.lasting / self.every)
                while drips is None or drips > 0:
                    if self._stop.wait(self.every):
                        return
                    connection.sendall(b"a")
                    drips = None if drips is None else drips - 1
                connection.sendall(b"\r\nContent-Length: 0\r\n\r\n")
            except OSError:  # the poster closed it
                self.cut_off += 1

    def close(self) -> None:
        self._stop.set()
        self._sock.close()
