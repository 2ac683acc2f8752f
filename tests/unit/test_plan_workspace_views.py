"""The plan workspace takes back only the overlays it made: the port's methods accept
any workspace view, and another kind is refused before anything is read or written.
Real directories, a real blob store and journal."""

import pytest

from cleveragents.infra.workspace.plan_workspace import PlanWorkspace


class ForeignView:
    """A workspace view that is not one of the plan workspace's overlays."""

    def read_bytes(self, path):
        return b"foreign\n"

    def exists(self, path):
        return True

    def mode(self, path):
        return 0o644

    def glob(self, pattern):
        return ["notes.txt"]

    def write_bytes(self, path, data, mode=None):
        raise AssertionError("never written through")

    def delete(self, path):
        raise AssertionError("never deleted through")


@pytest.fixture
def workspace(tmp_path):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_bytes(b"on disk\n")
    return PlanWorkspace(root, tmp_path / "state")


@pytest.mark.parametrize("call", [
    lambda ws, view: ws.diff(view),
    lambda ws, view: ws.apply("plan-1", view, False),
    lambda ws, view: ws.prepare_apply("plan-1", view, False),
], ids=["diff", "apply", "prepare_apply"])
def test_a_view_it_did_not_make_is_refused(workspace, tmp_path, call):
    with pytest.raises(TypeError, match="ForeignView"):
        call(workspace, ForeignView())
    assert (tmp_path / "ws" / "notes.txt").read_bytes() == b"on disk\n"
    assert workspace.recover() == []  # no journal was begun


def test_its_own_overlay_is_applied(workspace, tmp_path):
    overlay = workspace.overlay()
    overlay.write_bytes("notes.txt", b"changed\n")
    assert "notes.txt" in str(workspace.diff(overlay))
    workspace.apply("plan-1", overlay, False)
    assert (tmp_path / "ws" / "notes.txt").read_bytes() == b"changed\n"
