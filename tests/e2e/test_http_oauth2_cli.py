"""``agents serve --http`` configures OAuth2 from its ``--oauth2-*`` flags and the
``CLEVERAGENTS_OAUTH2_*`` variables, over the configuration file's ``[oauth2]`` table:
a real server process, tokens minted by the test against its JWKS on loopback."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.oauth2_issuer import AUDIENCE, ISSUER, TOKEN_URL

LISTENING = re.compile(r"^listening on (http://\S+)$", re.M)
SEND = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {"message": {"role": "ROLE_USER", "messageId": "m-1", "parts": [{"text": "hi"}]}}}
LIST = {"jsonrpc": "2.0", "id": 2, "method": "ListTasks", "params": {}}


def environment(tmp_path: Path, **variables: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLEVERAGENTS_")}
    return {**env, "XDG_CONFIG_HOME": str(tmp_path / "xdg"), **variables}


class Serving:
    """``agents serve --http`` on a free port; its stderr goes to a file."""

    def __init__(self, tmp_path: Path, *args: str, env: dict[str, str]):
        self.stderr_path = tmp_path / "serve.stderr"
        command = [sys.executable, "-m", "cleveragents.cli.main", "serve", "--http", "--port", "0", "--memory",
                   "--workspace", str(tmp_path), *args]
        with open(self.stderr_path, "wb") as err:
            self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                                            cwd=tmp_path, env=env)

    async def url(self) -> str:
        deadline = time.monotonic() + 30
        while not (match := LISTENING.search(self.stderr())):
            assert self.process.poll() is None and time.monotonic() < deadline, self.stderr()
            await asyncio.sleep(0.05)
        return match.group(1)

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "A2A-Version": "1.0"}


async def test_flags_and_variables_configure_oauth2(tmp_path, issuer):
    env = environment(tmp_path, CLEVERAGENTS_OAUTH2_ISSUER=ISSUER, CLEVERAGENTS_OAUTH2_AUDIENCE="https://elsewhere.test",
                      CLEVERAGENTS_OAUTH2_JWKS_URL=issuer.jwks_url, CLEVERAGENTS_OAUTH2_TOKEN_URL=TOKEN_URL,
                      CLEVERAGENTS_OAUTH2_SCOPES="agents:read=read;agents:send=read,send",
                      CLEVERAGENTS_OAUTH2_ACCEPT_PLAIN_JWT="true")
    # The flag's audience wins over the variable's; the scopes come from the variable.
    server = Serving(tmp_path, "--oauth2-audience", AUDIENCE, "--oauth2-audience", "https://second.test", env=env)
    try:
        url = await server.url()
        assert "token:" not in server.stderr()  # OAuth2 is the credential: no token made for the run
        async with httpx.AsyncClient(base_url=url, timeout=20) as http:
            card = (await http.get("/.well-known/agent-card.json")).json()
            flow = card["securitySchemes"]["oauth2"]["oauth2SecurityScheme"]["flows"]["clientCredentials"]
            assert flow["tokenUrl"] == TOKEN_URL and set(flow["scopes"]) == {"agents:read", "agents:send"}
            reader = bearer(issuer.mint(scope="agents:read", aud="https://second.test"))
            assert (await http.post("/a2a", json=LIST, headers=reader)).status_code == 200
            assert (await http.post("/a2a", json=SEND, headers=reader)).status_code == 403
            sender = bearer(issuer.mint(scope="agents:send", headers={"typ": "JWT"}))  # accept_plain_jwt
            sent = await http.post("/a2a", json=SEND, headers=sender)
            assert sent.status_code == 200 and sent.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
            elsewhere = await http.post("/a2a", json=LIST, headers=bearer(issuer.mint(aud="https://elsewhere.test")))
            assert elsewhere.status_code == 401
    finally:
        server.stop()


async def test_a_flag_changes_one_key_of_the_files_table(tmp_path, issuer):
    """The file names the keys' file; the flag points at the issuer's JWKS URL instead,
    the file's other keys (audience, scopes) stay."""
    (tmp_path / ".cleveragents").mkdir()
    (tmp_path / "old-jwks.json").write_text(json.dumps({"keys": []}))
    (tmp_path / ".cleveragents" / "config.toml").write_text(f'''
[oauth2]
issuer = "{ISSUER}"
audience = "{AUDIENCE}"
jwks_file = "../old-jwks.json"
token_url = "{TOKEN_URL}"

[oauth2.scopes]
"agents:read" = ["read"]
''')
    server = Serving(tmp_path, "--oauth2-jwks-url", issuer.jwks_url, env=environment(tmp_path))
    try:
        url = await server.url()
        async with httpx.AsyncClient(base_url=url, timeout=20) as http:
            reader = bearer(issuer.mint(scope="agents:read"))
            assert (await http.post("/a2a", json=LIST, headers=reader)).status_code == 200
            assert (await http.post("/a2a", json=SEND, headers=reader)).status_code == 403
    finally:
        server.stop()


@pytest.mark.parametrize(("args", "variables", "message"), [
    ((), {"CLEVERAGENTS_OAUTH2_ISSUER": ISSUER, "CLEVERAGENTS_OAUTH2_AUDIENCE": AUDIENCE},
     "agents serve: oauth2.jwks_url: give exactly one of jwks_url and jwks_file: where the signing keys are "
     "(--oauth2-jwks-url or CLEVERAGENTS_OAUTH2_JWKS_URL)"),
    (("--oauth2-jwks-url", "https://keys.test/jwks.json", "--oauth2-token-url", TOKEN_URL,
      "--oauth2-audience", AUDIENCE), {},
     "agents serve: oauth2.issuer: required (--oauth2-issuer or CLEVERAGENTS_OAUTH2_ISSUER)"),
    (("--oauth2-scope", "agents:read"), {},
     "agents serve: --oauth2-scope: 'agents:read' is not SCOPE=GRANT[,GRANT] (e.g. agents:send=read,send)"),
    ((), {"CLEVERAGENTS_OAUTH2_LEEWAY": "soon"},
     "agents serve: CLEVERAGENTS_OAUTH2_LEEWAY must be a number of seconds, not 'soon'"),
])
def test_a_bad_or_missing_setting_is_one_line_and_exit_2(tmp_path, args, variables, message):
    done = subprocess.run([sys.executable, "-m", "cleveragents.cli.main", "serve", "--http", "--port", "0",
                           "--memory", "--workspace", str(tmp_path), *args],
                          capture_output=True, text=True, timeout=60, env=environment(tmp_path, **variables))
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith(message), done.stderr


def test_help_lists_the_oauth2_flags():
    done = subprocess.run([sys.executable, "-m", "cleveragents.cli.main", "serve", "--http", "--help"],
                          capture_output=True, text=True, timeout=60)
    for option in ("--oauth2-issuer", "--oauth2-audience", "--oauth2-jwks-url", "--oauth2-jwks-file",
                   "--oauth2-token-url", "--oauth2-scope", "--oauth2-algorithm", "--oauth2-accept-plain-jwt",
                   "CLEVERAGENTS_OAUTH2_ISSUER"):
        assert option in done.stdout, option
