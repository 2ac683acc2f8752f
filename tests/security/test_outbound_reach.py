"""Where a remote agent can send the outbound client.

The user names an agent's URL; the agent names the rest: the interfaces in its card,
and any redirect while the card is read. A hostile agent could name this machine's
loopback services, its private network or a cloud metadata service, and the client
would post there, with the token. So nothing an agent names may be nearer to this
machine than the agent itself (loopback is nearer than the private network, which is
nearer than the internet), and no agent may name a metadata address. The check is of
the addresses the host resolves to, and the client connects to the address it checked.
"""

from __future__ import annotations

import asyncio
import fcntl
import ipaddress
import json
import socket
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from tests.contract.runners import UvicornServer

TOKEN = "reach-test-token-0123456789"


def own_address() -> str | None:
    """An IPv4 address of this machine other than loopback, or None."""
    for _, name in socket.if_nameindex():
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            try:  # SIOCGIFADDR: the interface's IPv4 address
                packed = fcntl.ioctl(probe.fileno(), 0x8915, struct.pack("256s", name.encode()[:15]))
            except OSError:
                continue
        address = socket.inet_ntoa(packed[20:24])
        if not ipaddress.ip_address(address).is_loopback:
            return address
    return None


@pytest.fixture
def network_address() -> str:
    address = own_address()
    if address is None:
        pytest.skip("this machine has no address but loopback")
    return address


class Listener:
    """A service on 127.0.0.1 that counts who connects to it."""

    def __init__(self) -> None:
        self.connections = 0
        self.server: asyncio.Server | None = None

    async def __aenter__(self) -> Listener:
        self.server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        writer.close()


def card_naming(url: str, binding: str = "JSONRPC") -> dict[str, Any]:
    return {"name": "hostile", "description": "names where the client goes", "version": "1",
            "supportedInterfaces": [{"url": url, "protocolBinding": binding, "protocolVersion": "1.0"}],
            "capabilities": {"streaming": True}, "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"], "skills": []}


@asynccontextmanager
async def agent_serving(host: str, card: dict[str, Any] | None = None,
                        redirect: str | None = None) -> AsyncIterator[str]:
    """An agent on ``host`` whose card is ``card``, or whose card path redirects."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, RedirectResponse, Response
    from starlette.routing import Route

    async def read_card(request: Any) -> Response:
        return RedirectResponse(redirect, 302) if redirect else JSONResponse(card)

    async with UvicornServer(Starlette(routes=[Route("/.well-known/{name}", read_card)]), host) as url:
        yield url


async def send_to(url: str) -> Any:
    from cleveragents.a2a.client import A2AClient, ServerConnectionConfig

    async with A2AClient(ServerConnectionConfig(url=url, token=TOKEN, timeout_seconds=3)) as client:
        return await client.send("hi")


def assert_refused(exc: Any, reason: str, address: str) -> None:
    from cleveragents.a2a.client import A2AClientTargetRefusedError

    assert isinstance(exc, A2AClientTargetRefusedError), repr(exc)
    assert exc.data["reason"] == reason and exc.data["address"] == address, exc.data
    assert TOKEN not in str(exc)


@pytest.mark.parametrize("name", ["127.0.0.1", "localhost"])
async def test_an_agent_on_the_network_cannot_send_the_client_to_loopback(name, network_address):
    async with Listener() as victim, \
            agent_serving(network_address, card_naming(f"http://{name}:{victim.port}/a2a")) as url:
        with pytest.raises(Exception) as caught:
            await send_to(url)
    assert victim.connections == 0
    assert_refused(caught.value, "loopback", "127.0.0.1")


async def test_a_redirect_while_the_card_is_read_is_held_to_the_same_rule(network_address):
    async with Listener() as victim, \
            agent_serving(network_address, redirect=f"http://127.0.0.1:{victim.port}/card.json") as url:
        with pytest.raises(Exception) as caught:
            await send_to(url)
    assert victim.connections == 0
    assert_refused(caught.value, "loopback", "127.0.0.1")


async def test_a_grpc_interface_is_held_to_the_same_rule(network_address):
    pytest.importorskip("grpc")
    async with Listener() as victim, \
            agent_serving(network_address, card_naming(f"127.0.0.1:{victim.port}", "GRPC")) as url:
        with pytest.raises(Exception) as caught:
            await send_to(url)
    assert victim.connections == 0
    assert_refused(caught.value, "loopback", "127.0.0.1")


@pytest.mark.parametrize("target", ["http://169.254.169.254/latest", "http://[fd00:ec2::254]/latest"])
async def test_no_agent_can_send_the_client_to_a_metadata_address(target):
    """Not even one on loopback, which may name any other address."""
    async with agent_serving("127.0.0.1", card_naming(target)) as url:
        with pytest.raises(Exception) as caught:
            await send_to(url)
    address = target.split("//")[1].split("/")[0].strip("[]")
    assert_refused(caught.value, "metadata", address)


async def test_an_interface_no_nearer_than_its_agent_is_called(network_address, tmp_path):
    """An agent on loopback may name one on the private network: the user's own
    machine, forwarding to a real agent."""
    import httpx

    from cleveragents.config import Settings
    from cleveragents.transports.http.app import build_app

    real = build_app(settings=Settings(workspace=tmp_path, memory=True, auth_tokens=(TOKEN,)))
    async with UvicornServer(real, network_address) as real_url:
        async with httpx.AsyncClient() as http:
            card = (await http.get(f"{real_url}/.well-known/agent-card.json")).json()
        assert network_address in json.dumps(card["supportedInterfaces"])
        async with agent_serving("127.0.0.1", card) as url:
            answer = await send_to(url)
    assert answer.status.state.value == "completed", answer


def self_signed(directory: Any, name: str) -> tuple[str, str]:
    """(certificate file, key file) of a self-signed certificate for the DNS ``name``."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = directory / f"{name}.pem", directory / f"{name}.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return str(cert_file), str(key_file)


@pytest.mark.parametrize("certified", ["localhost", "someone-else.example"])
async def test_a_pinned_address_is_still_spoken_to_by_its_hosts_name_over_tls(certified, tmp_path, monkeypatch):
    """The client connects to the address it checked, but TLS verifies the host's own
    name: a certificate for another name is refused."""
    from cleveragents.a2a.client import A2AClientConnectionError
    from cleveragents.config import Settings
    from cleveragents.transports.http.app import build_app

    cert_file, key_file = self_signed(tmp_path, certified)
    monkeypatch.setenv("SSL_CERT_FILE", cert_file)
    (tmp_path / "ws").mkdir()
    real = build_app(settings=Settings(workspace=tmp_path / "ws", memory=True))
    async with UvicornServer(real, ssl_certfile=cert_file, ssl_keyfile=key_file) as real_url:
        interface = real_url.replace("127.0.0.1", "localhost") + "/a2a"
        async with agent_serving("127.0.0.1", card_naming(interface)) as url:
            if certified == "localhost":
                answer = await send_to(url)
                assert answer.status.state.value == "completed", answer
            else:
                with pytest.raises(A2AClientConnectionError, match="CERTIFICATE_VERIFY_FAILED"):
                    await send_to(url)
