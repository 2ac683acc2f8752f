"""Plan apply and rollback through the client's editor (`workspace/applyEdit`), with a
real stdio server and a pytest-lsp client that declares the capability (or not) and
answers applied true or false."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient
from pytest_lsp.client import register_lsp_features

from tests.conftest import SERVER_COMMAND
from tests.contract.runners import _dict_converter

PLAN = "_cleveragents/plan/"
PLAN_ERROR = -32008
TIMEOUT = 15.0
EDIT_CAPABILITIES = types.ClientCapabilities(workspace=types.WorkspaceClientCapabilities(
    apply_edit=True,
    workspace_edit=types.WorkspaceEditClientCapabilities(
        document_changes=True,
        resource_operations=[types.ResourceOperationKind.Create, types.ResourceOperationKind.Delete]),
))
NEW_FILE_PATCH = "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,2 @@\n+made by the plan\n+second line\n"
DELETE_PATCH = "--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-old\n"


class Editor:
    """What the client received as `workspace/applyEdit`, and its scripted answers."""

    def __init__(self) -> None:
        self.edits: list[dict[str, Any]] = []
        self.answers: list[dict[str, Any]] = []

    def handle(self, params: Any) -> dict[str, Any]:
        self.edits.append(params if isinstance(params, dict) else _converter.unstructure(params))
        return self.answers.pop(0) if self.answers else {"applied": True}


_converter = _dict_converter()


async def start(workspace: Path, capabilities: types.ClientCapabilities) -> tuple[LanguageClient, Editor]:
    editor = Editor()

    def factory() -> LanguageClient:
        client = LanguageClient(converter_factory=_dict_converter)
        register_lsp_features(client)
        client.feature(types.WORKSPACE_APPLY_EDIT)(lambda params: editor.handle(params))
        return client

    config = ClientServerConfig(server_command=[*SERVER_COMMAND, "--workspace", str(workspace)], client_factory=factory)
    client = await config.start()
    await client.initialize_session(types.InitializeParams(capabilities=capabilities))
    return client, editor


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("foo one\nfoo two\n")
    (root / "gone.txt").write_text("old\n")
    return root


@pytest.fixture
async def session(workspace: Path) -> AsyncIterator[tuple[LanguageClient, Editor]]:
    client, editor = await start(workspace, EDIT_CAPABILITIES)
    yield client, editor
    await asyncio.wait_for(client.shutdown_session(), TIMEOUT)
    await client.stop()


async def call(client: LanguageClient, method: str, **params: Any) -> dict[str, Any]:
    return await asyncio.wait_for(client.protocol.send_request_async(PLAN + method, params), TIMEOUT)


async def executed_plan(client: LanguageClient, action: str, **arguments: Any) -> str:
    plan = await call(client, "use", action_name=action, arguments=arguments)
    await call(client, "execute", plan_id=plan["plan_id"])
    return plan["plan_id"]


def text_edits(edit: dict[str, Any]) -> dict[str, str]:
    return {change["textDocument"]["uri"]: change["edits"][0]["newText"]
            for change in edit["edit"]["documentChanges"] if "textDocument" in change}


async def test_apply_goes_through_the_editor_and_rollback_too(session, workspace: Path):
    client, editor = session
    plan_id = await executed_plan(client, "replace", pattern="foo", replacement="bar", glob="*.txt")

    applied = await call(client, "apply", plan_id=plan_id)
    assert applied["written_by"] == "editor" and applied["state"] == "completed"
    assert applied["files"] == ["a.txt"]
    uri = (workspace / "a.txt").as_uri()
    assert text_edits(editor.edits[0]) == {uri: "bar one\nbar two\n"}
    assert editor.edits[0]["label"] == "Apply plan replace"
    assert (workspace / "a.txt").read_text() == "foo one\nfoo two\n"  # the editor holds it until saved
    assert list((workspace / ".cleveragents" / "journal").glob("*.json")) == []

    (workspace / "a.txt").write_text("bar one\nbar two\n")  # the user saves
    rolled = await call(client, "rollback", plan_id=plan_id)
    assert rolled["written_by"] == "editor" and rolled["phase"] == "rollback" and rolled["state"] == "completed"
    assert text_edits(editor.edits[1]) == {uri: "foo one\nfoo two\n"}
    assert (workspace / "a.txt").read_text() == "bar one\nbar two\n"


async def test_new_and_deleted_files_become_create_and_delete_operations(session, workspace: Path):
    client, editor = session
    plan_id = await executed_plan(client, "apply-patch", patch=NEW_FILE_PATCH + DELETE_PATCH)
    await call(client, "apply", plan_id=plan_id)
    changes = editor.edits[0]["edit"]["documentChanges"]
    new, gone = (workspace / "new.txt").as_uri(), (workspace / "gone.txt").as_uri()
    assert [(c.get("kind"), c.get("uri") or c["textDocument"]["uri"]) for c in changes] == [
        ("delete", gone), ("create", new), (None, new)]
    assert changes[2]["edits"][0]["newText"] == "made by the plan\nsecond line\n"
    assert not (workspace / "new.txt").exists() and (workspace / "gone.txt").exists()

    await call(client, "rollback", plan_id=plan_id)
    back = editor.edits[1]["edit"]["documentChanges"]
    assert [(c.get("kind"), c.get("uri") or c["textDocument"]["uri"]) for c in back] == [
        ("create", gone), (None, gone), ("delete", new)]
    assert back[1]["edits"][0]["newText"] == "old\n"


async def test_a_client_without_document_changes_gets_a_changes_map(workspace: Path):
    """Neovim declares applyEdit and resource operations but not documentChanges."""
    plain = types.ClientCapabilities(workspace=types.WorkspaceClientCapabilities(apply_edit=True))
    client, editor = await start(workspace, plain)
    try:
        plan_id = await executed_plan(client, "replace", pattern="foo", replacement="bar", glob="*.txt")
        assert (await call(client, "apply", plan_id=plan_id))["written_by"] == "editor"
        [edit] = editor.edits[0]["edit"]["changes"][(workspace / "a.txt").as_uri()]
        assert edit["newText"] == "bar one\nbar two\n" and edit["range"]["start"] == {"line": 0, "character": 0}
        # A deletion can't be carried without resource operations: the server writes it.
        plan_id = await executed_plan(client, "apply-patch", patch=DELETE_PATCH)
        assert (await call(client, "apply", plan_id=plan_id))["written_by"] == "server"
        assert not (workspace / "gone.txt").exists() and len(editor.edits) == 1
    finally:
        await asyncio.wait_for(client.shutdown_session(), TIMEOUT)
        await client.stop()


async def test_a_refused_edit_fails_the_apply_and_changes_nothing(session, workspace: Path):
    client, editor = session
    plan_id = await executed_plan(client, "replace", pattern="foo", replacement="bar", glob="*.txt")
    editor.answers.append({"applied": False, "failureReason": "the user said no"})

    with pytest.raises(JsonRpcException) as refused:
        await call(client, "apply", plan_id=plan_id)
    assert refused.value.code == PLAN_ERROR
    assert refused.value.data["reason"] == "the user said no"
    status = await call(client, "status", plan_id=plan_id)
    assert (status["phase"], status["state"]) == ("apply", "failed")
    assert "the user said no" in status["reason"]
    assert (workspace / "a.txt").read_text() == "foo one\nfoo two\n"
    assert list((workspace / ".cleveragents" / "journal").glob("*.json")) == []

    again = await call(client, "apply", plan_id=plan_id)  # a failed apply may be tried again
    assert again["written_by"] == "editor" and len(editor.edits) == 2


async def test_without_the_capability_the_server_writes_the_disk(workspace: Path):
    client, editor = await start(workspace, types.ClientCapabilities())
    try:
        plan_id = await executed_plan(client, "replace", pattern="foo", replacement="bar", glob="*.txt")
        applied = await call(client, "apply", plan_id=plan_id)
        assert applied["written_by"] == "server"
        assert (workspace / "a.txt").read_text() == "bar one\nbar two\n"
        assert (await call(client, "rollback", plan_id=plan_id))["written_by"] == "server"
        assert (workspace / "a.txt").read_text() == "foo one\nfoo two\n"
        assert editor.edits == []
    finally:
        await asyncio.wait_for(client.shutdown_session(), TIMEOUT)
        await client.stop()


def test_only_text_without_mode_changes_goes_to_an_editor(tmp_path: Path):
    from cleveragents.infra.workspace.plan_workspace import PlanWorkspace

    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.txt").write_text("foo\n")
    workspace = PlanWorkspace(root, tmp_path / "state")

    def changes(path: str, data: bytes, mode: int | None = None) -> list[dict[str, Any]] | None:
        overlay = workspace.overlay()
        overlay.write_bytes(path, data, mode)
        return workspace.editor_changes(workspace.prepare_apply("p1", overlay, False), "post")

    assert changes("a.txt", b"bar\n") == [{"path": str(root / "a.txt"), "before": "foo\n", "after": "bar\n"}]
    assert changes("b.txt", b"new\n") == [{"path": str(root / "b.txt"), "before": None, "after": "new\n"}]
    assert changes("a.txt", b"\xff\xfe") is None
    assert changes("a.txt", b"bar\n", 0o755) is None
    assert changes("c.sh", b"run\n", 0o755) is None
    assert not (root / "b.txt").exists() and (root / "a.txt").read_text() == "foo\n"


async def test_a_restart_while_the_editor_holds_the_edit_moves_no_file(workspace: Path):
    """The server dies before the editor answers: the journal says the editor was making
    the change, so the restart leaves the files alone and the apply can be tried again."""
    asked = asyncio.Event()
    handlers: list[asyncio.Task[Any]] = []

    async def never_answer(params: Any) -> dict[str, Any]:
        handlers.append(asyncio.current_task())  # type: ignore[arg-type]
        asked.set()
        await asyncio.sleep(3600)
        return {"applied": True}

    client, _ = await start(workspace, EDIT_CAPABILITIES)
    client.protocol.fm.features[types.WORKSPACE_APPLY_EDIT] = never_answer
    plan_id = await executed_plan(client, "replace", pattern="foo", replacement="bar", glob="*.txt")
    apply = asyncio.ensure_future(client.protocol.send_request_async(PLAN + "apply", {"plan_id": plan_id}))
    await asyncio.wait_for(asked.wait(), TIMEOUT)
    journal = workspace / ".cleveragents" / "journal" / f"{plan_id}.json"
    assert '"status":"editor"' in journal.read_text()
    handlers[0].cancel()  # the editor never answers: the server is killed first
    client._server.kill()
    await client._server.wait()
    apply.cancel()
    await client.stop()

    client, editor = await start(workspace, EDIT_CAPABILITIES)
    try:
        status = await call(client, "status", plan_id=plan_id)
        assert (status["phase"], status["state"]) == ("apply", "failed")
        assert "the server changed no file" in status["reason"]
        assert not journal.exists()
        assert (workspace / "a.txt").read_text() == "foo one\nfoo two\n"
        assert (await call(client, "apply", plan_id=plan_id))["written_by"] == "editor"
    finally:
        await asyncio.wait_for(client.shutdown_session(), TIMEOUT)
        await client.stop()


async def test_an_apply_sent_as_the_server_starts_goes_through_the_editor(workspace: Path):
    """Requests that need nothing of the LSP layer are answered while it loads; an
    apply and a rollback need its connection to the editor, so they wait for it."""
    client, _ = await start(workspace, types.ClientCapabilities())
    plan_id = await executed_plan(client, "replace", pattern="foo", replacement="bar", glob="*.txt")
    await asyncio.wait_for(client.shutdown_session(), TIMEOUT)
    await client.stop()

    for step in ("apply", "rollback"):
        client, editor = await start(workspace, EDIT_CAPABILITIES)  # the first request after initialize
        try:
            written = await call(client, step, plan_id=plan_id)
            assert (written["phase"], written["state"], written["written_by"]) == (step, "completed", "editor")
            assert len(editor.edits) == 1 and editor.edits[0]["label"].endswith("plan replace")
        finally:
            await asyncio.wait_for(client.shutdown_session(), TIMEOUT)
            await client.stop()
        if step == "apply":
            (workspace / "a.txt").write_text("bar one\nbar two\n")  # the user saves
