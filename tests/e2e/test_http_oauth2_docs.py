"""docs/http.md's OAuth2 section says what the code does: its Python example runs as
written and serves what it says (with the keys moved to a JWKS endpoint on loopback),
its TOML example is the same settings, and its table of groups is the code's."""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
import sys

import httpx

from cleveragents.a2a import dialects, methods
from cleveragents.a2a.access import GROUPS, group_of
from cleveragents.config import OAuth2
from cleveragents.infra.config_file import USER_CONFIG_ENV, load_config, workspace_config_path
from tests.conftest import REPO
from tests.contract.runners import UvicornServer

SECTION = (REPO / "docs" / "http.md").read_text().split("### OAuth2 with JWT access tokens", 1)[1].split("\n## ", 1)[0]


def block(language: str) -> str:
    return re.search(rf"```{language}\n(.*?)```", SECTION, re.S).group(1)


def test_the_toml_example_is_the_python_examples_settings(tmp_path):
    namespace: dict = {}
    exec(compile(block("python"), "http.md", "exec"), namespace)  # noqa: S102 - the docs' own example
    path = workspace_config_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(block("toml"))
    table = load_config(tmp_path, None, {USER_CONFIG_ENV: str(tmp_path / "none.toml")}).oauth2
    assert OAuth2(**table) == namespace["oauth2"]


def test_the_groups_table_is_the_codes():
    rows = re.findall(r"^\| `(\w+)` \| (.*) \|$", SECTION, re.M)
    documented = {group: set(re.findall(r"`([^`]+)`", names)) for group, names in rows if group in GROUPS}
    assert set(documented) == set(GROUPS)
    for group in GROUPS:
        actual = {spec.name for spec in methods.METHODS.values()
                  if group_of(spec) == group and spec.dialect in (dialects.A2A_V1, dialects.EXTENSION)}
        assert documented[group] == actual, group


async def test_the_python_example_serves_what_the_section_says(tmp_path, issuer, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    namespace: dict = {}
    exec(compile(block("python"), "http.md", "exec"), namespace)  # noqa: S102 - the docs' own example
    a2a, oauth2 = namespace["a2a"], namespace["oauth2"]
    local = dataclasses.replace(oauth2, jwks_url=issuer.jwks_url)  # the example's keys, served on loopback
    server = UvicornServer(a2a.asgi_app(workspace=tmp_path, memory=True, oauth2=local))
    await server.start()

    def token(scope: str) -> dict[str, str]:
        minted = issuer.mint(iss=oauth2.issuer, aud=oauth2.audience, scope=scope)
        return {"Authorization": f"Bearer {minted}", "A2A-Version": "1.0"}

    send = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
            "params": {"message": {"role": "ROLE_USER", "messageId": "m-1", "parts": [{"text": "hi"}]}}}
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=20) as client:
            card = (await client.get("/.well-known/agent-card.json")).json()
            flow = card["securitySchemes"]["oauth2"]["oauth2SecurityScheme"]["flows"]["clientCredentials"]
            assert flow["tokenUrl"] == oauth2.token_url and set(flow["scopes"]) == set(oauth2.scopes)
            assert card["securityRequirements"] == [{"schemes": {"oauth2": {"list": ["agents:send"]}}},
                                                    {"schemes": {"oauth2": {"list": ["agents:admin"]}}}]
            reader = token("agents:read")
            listed = await client.post("/a2a", json={**send, "method": "ListTasks", "params": {}}, headers=reader)
            assert listed.status_code == 200
            refused = await client.post("/a2a", json=send, headers=reader)
            assert refused.status_code == 403
            assert refused.headers["www-authenticate"].endswith('error="insufficient_scope", '
                                                                'scope="agents:send agents:admin"')
            sent = await client.post("/a2a", json=send, headers=token("agents:send"))
            assert sent.json()["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
            expired = await client.post("/a2a", json=send, headers={
                "Authorization": "Bearer " + issuer.mint(iss=oauth2.issuer, aud=oauth2.audience, exp=1, iat=0)})
            assert expired.status_code == 401 and 'error="invalid_token"' in expired.headers["www-authenticate"]
    finally:
        await server.stop()


def test_the_who_is_calling_example_prints_what_it_says():
    part = SECTION.split("**Who is calling.**", 1)[1]
    code, output = re.findall(r"```(?:python|text)\n(.*?)```", part, re.S)[:2]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=REPO,
                          env={k: v for k, v in os.environ.items() if not k.startswith("CLEVERAGENTS_")})
    assert done.returncode == 0, done.stderr
    assert done.stdout == output
