"""The configuration file and the real stdio server: a bad file stops it before it
answers anything; a good one feeds the registries and the defaults."""

from __future__ import annotations

import pytest

from cleveragents.infra.config_file import USER_CONFIG_ENV, workspace_config_path
from tests.e2e.rawclient import RawServer


@pytest.fixture(autouse=True)
def no_user_file(tmp_path, monkeypatch):
    monkeypatch.setenv(USER_CONFIG_ENV, str(tmp_path / "no-user-config.toml"))


def configure(workspace, text: str):
    path = workspace_config_path(workspace)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


async def test_a_bad_config_file_makes_the_server_exit_2_naming_file_line_and_key(workspace):
    path = configure(workspace, '[defaults]\ndefault_actor = "local/default"\n\n[actors."openai/gpt-4o"]\nmodle = "x"\n')
    server = await RawServer.start("--workspace", str(workspace))
    try:
        server.send_message({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                             "params": {"processId": None, "capabilities": {}}})
        server.close_stdin()
        code, out, err = await server.wait()
    finally:
        await server.kill()
    assert code == 2
    assert out == b""  # initialize is not answered: the server never started
    assert err.decode().splitlines() == [f'cleveragents-lsp: {path}:5: actors."openai/gpt-4o".modle: unknown key']


async def test_a_bad_user_file_stops_it_too(workspace, tmp_path, monkeypatch):
    user = tmp_path / "user.toml"
    user.write_text("[defaults]\nmax_terminal_tasks = [\n")
    monkeypatch.setenv(USER_CONFIG_ENV, str(user))
    server = await RawServer.start("--workspace", str(workspace))
    try:
        server.close_stdin()
        code, out, err = await server.wait()
    finally:
        await server.kill()
    assert (code, out) == (2, b"")
    assert err.decode().startswith(f"cleveragents-lsp: {user}:3: ")


async def test_a_good_config_file_feeds_the_registries_over_stdio(workspace):
    configure(workspace, '[defaults]\ndefault_actor = "team/reviewer"\n\n'
                         '[actors."team/reviewer"]\nprovider = "openai"\nmodel = "gpt-4o-mini"\n\n'
                         '[resources.docs]\ntype_name = "repository"\nuri = "https://example.invalid/docs"\n')
    server = await RawServer.start("--workspace", str(workspace), "--memory")
    try:
        await server.initialize()
        actors = (await server.request(1, "_cleveragents/registry/actor/list"))["result"]["actors"]
        assert {"name": "team/reviewer", "kind": "declared", "provider": "openai", "model": "gpt-4o-mini",
                "default": True}.items() <= actors[0].items()
        resources = (await server.request(2, "_cleveragents/registry/resource/list", {"type_name": "repository"}))
        assert [r["name"] for r in resources["result"]["resources"]] == ["docs"]
        server.close_stdin()
        code, _, _ = await server.wait()
        assert code == 0
    finally:
        await server.kill()


async def test_a_bad_file_in_the_clients_workspace_is_the_answer_to_each_request(workspace, tmp_path):
    path = configure(workspace, '[projects.api]\npath = 3\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    server = await RawServer.start("--memory", cwd=elsewhere)
    try:
        await server.initialize(rootUri=workspace.as_uri())
        for msg_id in (1, 2):
            error = (await server.request(msg_id, "_cleveragents/registry/project/list"))["error"]
            assert error["code"] == -32602
            assert error["message"].startswith(f"{path}:2: projects.api.path: ")
            assert error["data"]["line"] == 2 and error["data"]["key"] == "projects.api.path"
        server.close_stdin()
        await server.wait()
    finally:
        await server.kill()
