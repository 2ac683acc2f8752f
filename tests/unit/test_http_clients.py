"""What outbound HTTP clients share (``cleveragents/http_clients.py``): the TLS
context, and clients kept between calls."""

import asyncio
import ssl

import httpx

from cleveragents import http_clients
from cleveragents.http_clients import KeptClients


def test_one_context_serves_every_client_until_the_trusted_certificates_change(tmp_path, monkeypatch):
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    shared = http_clients.tls_context()
    assert isinstance(shared, ssl.SSLContext) and shared.verify_mode == ssl.CERT_REQUIRED and shared.check_hostname
    assert http_clients.tls_context() is shared
    monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path))
    assert http_clients.tls_context() is not shared
    monkeypatch.delenv("SSL_CERT_DIR")
    assert http_clients.tls_context() is shared


async def test_a_client_is_kept_by_key_and_the_one_used_longest_ago_is_closed():
    made: list[httpx.AsyncClient] = []

    def make(key: str) -> httpx.AsyncClient:
        made.append(httpx.AsyncClient())
        return made[-1]

    kept = KeptClients(make, size=2)
    a, b = kept.get("a"), kept.get("b")
    assert kept.get("a") is a and len(made) == 2  # "a" is now the one used last
    kept.get("c")
    await asyncio.sleep(0)  # the closing of the one made room from
    await asyncio.sleep(0)
    assert b.is_closed and not a.is_closed
    assert kept.get("b") is not b and len(made) == 4
    await kept.aclose()
    assert all(client.is_closed for client in made)


def test_a_client_serves_only_the_event_loop_that_made_it():
    kept = KeptClients(lambda key: httpx.AsyncClient(), size=4)

    async def client() -> httpx.AsyncClient:
        return kept.get("agent")

    first = asyncio.run(client())
    assert asyncio.run(client()) is not first
