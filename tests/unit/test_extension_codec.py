"""The wire form of plan results: what a2a/extension_codec gives for the domain objects."""

from cleveragents.a2a import extension_codec as wire
from cleveragents.domain.plan import Decision, Phase, Plan, Profile, State, Step
from cleveragents.domain.plan_files import PlanArtifact
from cleveragents.domain.plan_results import ArtifactShown, PlanArtifacts, PlanMoved, PlanTree, PlanWritten

T0 = "2026-01-01T00:00:00.000Z"
PLAN = Plan("p1", "replace", {}, Profile.SUPERVISED, (Step("s1", "fs.replace", {}),), T0, T0,
            Phase.EXECUTE, State.RUNNING)


def test_an_artifact_is_shown_without_its_blob_and_with_its_short_text():
    artifact = PlanArtifact("a1", "d1", "log.txt", "text/plain", "f" * 64, 2, T0)
    shown = wire.plan_artifacts(PlanArtifacts("p1", (ArtifactShown(artifact, "hi"), ArtifactShown(artifact))))
    assert shown == {"plan_id": "p1", "artifacts": [
        {"artifact_id": "a1", "decision_id": "d1", "name": "log.txt", "media_type": "text/plain", "size": 2,
         "created_at": T0, "text": "hi"},
        {"artifact_id": "a1", "decision_id": "d1", "name": "log.txt", "media_type": "text/plain", "size": 2,
         "created_at": T0},
    ]}


def test_a_moved_plan_says_whether_it_still_runs():
    assert wire.plan_moved(PlanMoved(PLAN)) == PLAN.status()
    assert wire.plan_moved(PlanMoved(PLAN, running=True)) == {**PLAN.status(), "running": True}
    assert wire.plan_moved(PlanMoved(PLAN, cancelling=True)) == {**PLAN.status(), "cancelling": True}
    written = wire.plan_written(PlanWritten(PLAN, ("a.py",), "editor"))
    assert written == {**PLAN.status(), "files": ["a.py"], "written_by": "editor"}
    assert list(wire.plan_prompted(PLAN))[:2] == ["plan_id", "queued"]


def test_the_tree_nests_decisions_by_their_parents():
    first = Decision("d1", "p1", "s1", "fs.replace", {})
    child = Decision("d2", "p1", "s1", "actor.edit", {}, parent_id="d1", kind="tool_call")
    tree = wire.plan_tree(PlanTree(PLAN, (first, child)))
    assert [root["decision_id"] for root in tree["roots"]] == ["d1"]
    assert [node["decision_id"] for node in tree["roots"][0]["children"]] == ["d2"]
    assert [d["decision_id"] for d in tree["decisions"]] == ["d1", "d2"]
