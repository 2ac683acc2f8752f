"""Contract cases for plans: the lifecycle, profiles, guards, the decision tree."""

from __future__ import annotations

import os
from typing import Any

from tests.contract.cases import case, error_of, result_of

REPLACE = {"pattern": "foo", "replacement": "bar", "glob": "**/*.py"}


def seed_files(runner: Any) -> dict[str, bytes]:
    files = {"src/a.py": b"x = foo\n", "src/b.py": b"foo()\nfoo()\n", "notes.txt": b"foo\n"}
    for path, data in files.items():
        target = runner.workspace / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    os.chmod(runner.workspace / "src/b.py", 0o755)
    return files


def snapshot(runner: Any) -> dict[str, tuple[bytes, int]]:
    out = {}
    for path in sorted(runner.workspace.rglob("*")):
        if path.is_file() and ".cleveragents" not in path.parts:
            out[str(path.relative_to(runner.workspace))] = (path.read_bytes(), path.stat().st_mode)
    return out


async def use(runner: Any, profile: str = "supervised", action: str = "replace",
              arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    return result_of(await runner.call("_cleveragents/plan/use", {
        "action_name": action, "arguments": REPLACE if arguments is None else arguments,
        "automation_profile": profile,
    }))


@case
async def plan_flow_changes_nothing_until_apply_and_rolls_back_exactly(runner):
    seed_files(runner)
    before = snapshot(runner)
    plan = await use(runner)
    plan_id = plan["plan_id"]
    assert (plan["phase"], plan["state"]) == ("plan", "ready")

    executed = result_of(await runner.call("_cleveragents/plan/execute", {"plan_id": plan_id}))
    assert (executed["phase"], executed["state"]) == ("execute", "input-required")
    assert "apply" in executed["allowed_actions"]
    diff = result_of(await runner.call("_cleveragents/plan/diff", {"plan_id": plan_id}))
    assert "-x = foo\n+x = bar\n" in diff["diff"]
    assert {f["path"]: f["status"] for f in diff["files"]} == {"src/a.py": "modified", "src/b.py": "modified"}
    assert diff["files"][1]["additions"] == 2 and diff["files"][1]["hunks"][0]["lines"][0] == "-foo()"
    assert snapshot(runner) == before  # execution never touches the workspace

    applied = result_of(await runner.call("_cleveragents/plan/apply", {"plan_id": plan_id}))
    assert (applied["phase"], applied["state"]) == ("apply", "completed")
    assert sorted(applied["files"]) == ["src/a.py", "src/b.py"]
    assert (runner.workspace / "src/b.py").read_bytes() == b"bar()\nbar()\n"
    assert (runner.workspace / "src/b.py").stat().st_mode == before["src/b.py"][1]
    assert (runner.workspace / "notes.txt").read_bytes() == b"foo\n"
    # After the apply the diff still shows what the plan changed.
    assert "+x = bar" in result_of(await runner.call("_cleveragents/plan/diff", {"plan_id": plan_id}))["diff"]

    rolled = result_of(await runner.call("_cleveragents/plan/rollback", {"plan_id": plan_id}))
    assert (rolled["phase"], rolled["state"]) == ("rollback", "completed")
    assert snapshot(runner) == before
    status = result_of(await runner.call("_cleveragents/plan/status", {"plan_id": plan_id}))
    assert status == {"plan_id": plan_id, "phase": "rollback", "state": "completed", "allowed_actions": []}


@case
async def each_profile_has_its_gates(runner):
    seed_files(runner)
    manual = await use(runner, "manual")
    assert (manual["phase"], manual["state"]) == ("plan", "input-required")
    executed = result_of(await runner.call("_cleveragents/plan/execute", {"plan_id": manual["plan_id"]}))
    assert executed["state"] == "input-required"

    autonomous = await use(runner, "autonomous")
    assert autonomous["state"] == "ready"
    executed = result_of(await runner.call("_cleveragents/plan/execute", {"plan_id": autonomous["plan_id"]}))
    assert (executed["phase"], executed["state"]) == ("execute", "completed")
    applied = result_of(await runner.call("_cleveragents/plan/apply", {"plan_id": autonomous["plan_id"]}))
    assert applied["state"] == "completed"


@case
async def illegal_transitions_name_the_state_and_the_way_out(runner):
    seed_files(runner)
    plan = await use(runner)
    error = error_of(await runner.call("_cleveragents/plan/apply", {"plan_id": plan["plan_id"]}))
    assert error["code"] == -32004
    assert error["data"]["phase"] == "plan" and error["data"]["state"] == "ready"
    assert error["data"]["allowed_actions"] == ["cancel", "execute", "prompt"]
    cancelled = result_of(await runner.call("_cleveragents/plan/cancel", {"plan_id": plan["plan_id"]}))
    assert cancelled["state"] == "cancelled"
    again = error_of(await runner.call("_cleveragents/plan/execute", {"plan_id": plan["plan_id"]}))
    assert again["code"] == -32004 and again["data"]["allowed_actions"] == []
    missing = error_of(await runner.call("_cleveragents/plan/status", {"plan_id": "01JNOTAPLAN0000000000000000"}))
    assert missing["code"] == -32001 and missing["data"] == {"plan_id": "01JNOTAPLAN0000000000000000"}
    unknown = error_of(await runner.call("_cleveragents/plan/use", {"action_name": "no-such-action"}))
    assert unknown["code"] == -32001 and "replace" in unknown["data"]["available"]


@case
async def guard_breaches_are_refused_and_change_nothing(runner):
    seed_files(runner)
    outside = runner.workspace.parent / "outside"
    outside.mkdir(exist_ok=True)
    (runner.workspace / "link").symlink_to(outside, target_is_directory=True)
    before = snapshot(runner)
    for target in ("../outside/escaped.txt", "link/escaped.txt", ".git/config"):
        patch = f"--- /dev/null\n+++ b/{target}\n@@ -0,0 +1 @@\n+owned\n"
        plan = await use(runner, "autonomous", "apply-patch", {"patch": patch})
        error = error_of(await runner.call("_cleveragents/plan/execute", {"plan_id": plan["plan_id"]}))
        assert error["code"] == -32003, (target, error)
        assert error["data"]["reason"] in {"outside_workspace", "symlink_escape", "protected"}
        status = result_of(await runner.call("_cleveragents/plan/status", {"plan_id": plan["plan_id"]}))
        assert (status["phase"], status["state"]) == ("execute", "failed")
        diff = result_of(await runner.call("_cleveragents/plan/diff", {"plan_id": plan["plan_id"]}))
        assert diff["files"] == []
    assert snapshot(runner) == before
    assert list(outside.iterdir()) == []


@case
async def correct_reruns_from_a_decision_and_explain_shows_it(runner):
    seed_files(runner)
    plan_id = (await use(runner))["plan_id"]
    result_of(await runner.call("_cleveragents/plan/execute", {"plan_id": plan_id}))
    tree = result_of(await runner.call("_cleveragents/plan/tree", {"plan_id": plan_id}))
    (first,) = tree["decisions"]
    assert first["tool"] == "fs.replace" and first["outcome"] == "succeeded" and first["writes"] == 2

    explained = result_of(await runner.call("_cleveragents/plan/explain",
                                            {"plan_id": plan_id, "decision_id": first["decision_id"]}))
    assert explained["arguments"]["replacement"] == "bar"
    assert sorted(explained["writes"]) == ["src/a.py", "src/b.py"]
    assert explained["started_at"] and explained["duration_ms"] >= 0

    corrected = result_of(await runner.call("_cleveragents/plan/correct", {
        "plan_id": plan_id, "decision_id": first["decision_id"], "arguments": {"replacement": "baz"},
        "guidance": "baz is the project's name for it",
    }))
    assert corrected["state"] == "input-required"
    diff = result_of(await runner.call("_cleveragents/plan/diff", {"plan_id": plan_id}))
    assert "+x = baz" in diff["diff"] and "bar" not in diff["diff"]
    tree = result_of(await runner.call("_cleveragents/plan/tree", {"plan_id": plan_id}))
    assert [d["outcome"] for d in tree["decisions"]] == ["superseded", "succeeded"]
    assert len(tree["roots"]) == 2  # the correction branches off where the first decision was
    new = tree["decisions"][1]["decision_id"]
    explained = result_of(await runner.call("_cleveragents/plan/explain", {"plan_id": plan_id, "decision_id": new}))
    assert explained["guidance"] == ["baz is the project's name for it"]
    missing = error_of(await runner.call("_cleveragents/plan/explain", {"plan_id": plan_id, "decision_id": "nope"}))
    assert missing["code"] == -32001


@case
async def apply_refuses_files_changed_since_execute(runner):
    seed_files(runner)
    plan_id = (await use(runner))["plan_id"]
    result_of(await runner.call("_cleveragents/plan/execute", {"plan_id": plan_id}))
    (runner.workspace / "src/a.py").write_bytes(b"x = foo  # edited\n")
    error = error_of(await runner.call("_cleveragents/plan/apply", {"plan_id": plan_id}))
    assert error["code"] == -32008 and error["data"]["conflicts"] == ["src/a.py"]
    assert (runner.workspace / "src/b.py").read_bytes() == b"foo()\nfoo()\n"
    status = result_of(await runner.call("_cleveragents/plan/status", {"plan_id": plan_id}))
    assert (status["phase"], status["state"]) == ("execute", "input-required")
    forced = result_of(await runner.call("_cleveragents/plan/apply", {"plan_id": plan_id, "force": True}))
    assert forced["state"] == "completed"
    assert (runner.workspace / "src/a.py").read_bytes() == b"x = bar\n"


@case
async def plan_events_reach_subscribers(runner):
    seed_files(runner)
    subscribed, events = await runner.subscribe({"event_types": ["TaskStatusUpdateEvent"]})
    assert subscribed["result"]["live"] is True
    plan_id = (await use(runner, "autonomous"))["plan_id"]
    result_of(await runner.call("_cleveragents/plan/execute", {"plan_id": plan_id}))
    result_of(await runner.call("_cleveragents/plan/apply", {"plan_id": plan_id}))
    seen = [(await events.next())["data"] for _ in range(5)]
    assert [(e["domain_event"], e["phase"], e["state"]) for e in seen] == [
        ("PLAN_CREATED", "plan", "ready"),
        ("PLAN_PHASE_CHANGED", "execute", "running"),
        ("PLAN_STATE_CHANGED", "execute", "completed"),
        ("PLAN_PHASE_CHANGED", "apply", "running"),
        ("PLAN_APPLIED", "apply", "completed"),
    ]
    assert seen[-1]["files"] == ["src/a.py", "src/b.py"] and events.pending() == 0


@case
async def legacy_plan_aliases_work(runner):
    seed_files(runner)
    created = result_of(await runner.call("plan.create", {"action_name": "replace", "arguments": REPLACE}))
    plan_id = created["plan_id"]
    assert result_of(await runner.call("plan.execute", {"plan_id": plan_id}))["state"] == "input-required"
    assert result_of(await runner.call("plan.status", {"plan_id": plan_id}))["phase"] == "execute"
    assert "+x = bar" in result_of(await runner.call("plan.diff", {"plan_id": plan_id}))["diff"]
    assert result_of(await runner.call("plan.apply", {"plan_id": plan_id}))["state"] == "completed"


@case
async def registries_list_tools_and_actions(runner):
    tools = result_of(await runner.call("_cleveragents/registry/tool/list", {"namespace": "fs"}))["tools"]
    assert [t["name"] for t in tools] == ["fs.glob", "fs.read", "fs.replace", "fs.search", "fs.write"]
    assert tools[3]["input_schema"]["required"] == ["pattern"]
    actions_dir = runner.workspace / ".cleveragents" / "actions"
    actions_dir.mkdir(parents=True, exist_ok=True)
    (actions_dir / "rename.toml").write_text(
        'description = "Rename a word"\n[arguments.old]\ntype = "string"\n[arguments.new]\ntype = "string"\n'
        '[[steps]]\ntool = "fs.replace"\narguments = { pattern = "{{ old }}", replacement = "{{ new }}" }\n')
    (actions_dir / "broken.toml").write_text("description = \n")
    listed = result_of(await runner.call("_cleveragents/registry/action/list", {}))
    names = {a["name"]: a for a in listed["actions"]}
    assert {"replace", "apply-patch", "run", "rename"} <= set(names)
    assert names["rename"]["source"].endswith("rename.toml")
    (problem,) = listed["problems"]
    assert problem["file"] == ".cleveragents/actions/broken.toml" and problem["line"] == 1
