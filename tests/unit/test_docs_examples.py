"""The examples in the docs run as written."""

import re
from pathlib import Path

from cleveragents.infra.actions import load_actions

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_the_configuration_pages_action_example_loads_and_renders(tmp_path):
    toml = re.search(r"```toml\n(.*?)```", (DOCS / "configuration.md").read_text(), re.S).group(1)
    (tmp_path / ".cleveragents" / "actions").mkdir(parents=True)
    (tmp_path / ".cleveragents" / "actions" / "rename.toml").write_text(toml)
    actions, problems = load_actions(tmp_path)
    assert problems == []
    rename = next(a for a in actions if a.name == "rename")
    (step,) = rename.render(rename.bind({"old": "old", "new": "new"}))
    assert step.tool == "fs.replace"
    assert step.arguments == {"pattern": r"\bold\b", "replacement": "new", "glob": "**/*.py"}


def test_the_configuration_pages_config_file_example_loads(tmp_path):
    from cleveragents.infra.actors.resolve import known_providers
    from cleveragents.infra.config_file import USER_CONFIG_ENV, load_config, workspace_config_path

    section = (DOCS / "configuration.md").read_text().split("## The configuration file", 1)[1]
    toml = re.search(r"```toml\n(.*?)```", section, re.S).group(1)
    path = workspace_config_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(toml)
    config = load_config(tmp_path, known_providers(), {USER_CONFIG_ENV: str(tmp_path / "none.toml")})
    assert sorted(config.actors) == ["openai/gpt-4o", "team/reviewer"]
    assert config.defaults["default_actor"] == "openai/gpt-4o"
    assert list(config.projects) == ["api"] and list(config.resources) == ["docs"]


def _table_after(text: str, heading: str) -> list[list[str]]:
    """The rows of the first table after ``heading``, cells unescaped (``\\|``)."""
    lines = text.split(heading, 1)[1].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        cells = re.split(r"(?<!\\)\|", line.strip()[1:-1])
        rows.append([cell.strip().strip("`").replace("\\|", "|") for cell in cells])
    return rows


def test_the_tools_pages_searches_find_what_it_says(tmp_path):
    from cleveragents.domain.tools import ToolContext
    from cleveragents.infra.tools.fs import SearchTool
    from cleveragents.infra.workspace.blobs import BlobStore
    from cleveragents.infra.workspace.overlay import Overlay

    rows = _table_after((DOCS / "tools.md").read_text(), "Some searches")
    assert len(rows) >= 5
    context = ToolContext(view=Overlay(tmp_path, BlobStore(tmp_path / ".blobs")), workspace=str(tmp_path))
    for pattern, text, columns in rows:
        (tmp_path / "line.txt").write_text(text + "\n")
        found = SearchTool().run({"pattern": pattern, "glob": "line.txt"}, context).output["results"]
        assert ", ".join(str(hit["column"]) for hit in found) == columns, (pattern, text)


def test_the_tools_pages_time_limit_error_is_the_one_raised():
    import json

    from cleveragents.a2a.dialects import EXTENSION
    from cleveragents.a2a.errors import error_payload
    from cleveragents.domain.tools import ToolTimeoutError

    shown = json.loads(re.search(r"```json\n(.*?)```", (DOCS / "tools.md").read_text(), re.S).group(1))
    assert error_payload(ToolTimeoutError.of("fs.replace", 300), EXTENSION) == shown


def http_page_example(heading: str, workspace):
    """What the first Python example under ``heading`` in http.md defines, the app it
    builds, and an ASGI transport to that app from a loopback address."""
    import httpx

    section = (DOCS / "http.md").read_text().split(heading, 1)[1]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    namespace: dict = {}
    exec(compile(code, "http.md", "exec"), namespace)  # noqa: S102 - the docs' own example
    app = namespace["a2a"].asgi_app(workspace=workspace, memory=True)
    return namespace, app, httpx.ASGITransport(app=app, client=("127.0.0.1", 50000))


async def test_the_http_pages_direct_reply_example_answers_with_a_message(tmp_path):
    import httpx

    _, app, transport = http_page_example("## Answering with a message", tmp_path)

    def send(text: str) -> dict:
        return {"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
                "params": {"message": {"role": "ROLE_USER", "messageId": f"m-{text}", "parts": [{"text": text}]}}}

    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=transport, base_url="http://127.0.0.1", headers={"A2A-Version": "1.0"}) as client:
        greeted = (await client.post("/a2a", json=send("hello"))).json()["result"]
        worked = (await client.post("/a2a", json=send("app.py"))).json()["result"]
    assert greeted["message"]["parts"] == [{"text": "Hello! Send me a file name to review."}]
    assert greeted["message"]["metadata"] == {"kind": "greeting"}
    assert worked["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_the_http_pages_extension_example_requires_its_extension(tmp_path):
    import httpx

    namespace, app, transport = http_page_example("## Extensions", tmp_path)
    send = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
            "params": {"message": {"role": "ROLE_USER", "messageId": "m-1", "parts": [{"text": "hi"}]}}}

    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=transport, base_url="http://127.0.0.1", headers={"A2A-Version": "1.0"}) as client:
        card = (await client.get("/.well-known/agent-card.json")).json()
        refused = (await client.post("/a2a", json=send)).json()
        served = await client.post("/a2a", json=send, headers={"A2A-Extensions": namespace["SIGNED"]})
    assert [e["uri"] for e in card["capabilities"]["extensions"] if e["required"]] == [namespace["SIGNED"]]
    assert refused["error"]["code"] == -32008
    assert served.headers["A2A-Extensions"] == namespace["SIGNED"]
    assert served.json()["result"]["task"]["artifacts"][0]["parts"] == [{"text": "signed: hi"}]


def test_no_doc_installs_the_package_by_name():
    """No index serves ``cleveragents`` yet: every ``pip install`` of it names a checkout
    (``.``) or a built wheel, never the bare name."""
    pages = [*DOCS.glob("*.md"), DOCS.parent / "README.md"]
    by_name = re.compile(r"""pip install\s+(?:-\S+\s+)*["']?cleveragents\b""")
    found = [f"{page.name}: {m.group(0)}" for page in pages for m in by_name.finditer(page.read_text())]
    assert found == []
    http = (DOCS / "http.md").read_text()
    assert 'pip install -e ".[http]"' in http and "pip wheel --no-deps -w dist ." in http
