import pytest
from pydantic import ValidationError

from cleveragents.a2a import (
    A2ANotAvailableError,
    ServerConnectionConfig,
    StubAuthClient,
    StubRemoteExecutionClient,
    StubServerClient,
)


def test_the_example_config_validates():
    config = ServerConnectionConfig(url="https://my-server.example.com", token="...")
    assert config.url == "https://my-server.example.com"
    assert "..." not in repr(config)  # the token is a secret


@pytest.mark.parametrize("url", ["ftp://host", "my-server", "https://", "http://user:pw@host"])
def test_bad_urls_are_refused(url):
    with pytest.raises(ValidationError):
        ServerConnectionConfig(url=url, token="t")


def test_a_token_is_optional_but_never_blank():
    assert ServerConnectionConfig(url="https://host").token is None  # a server without auth
    with pytest.raises(ValidationError):
        ServerConnectionConfig(url="https://host", token="  ")


async def test_stubs_say_server_mode_is_not_available():
    with pytest.raises(A2ANotAvailableError):
        await StubServerClient().call("tasks/get", {"id": "t"})
    with pytest.raises(A2ANotAvailableError):
        await StubRemoteExecutionClient().execute("p")
    with pytest.raises(A2ANotAvailableError):
        await StubAuthClient().authenticate()
