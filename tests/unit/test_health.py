from cleveragents.app.health import HealthService
from cleveragents.infra.store.memory import MemoryStore


class BrokenStore(MemoryStore):
    async def ping(self):
        raise OSError("disk I/O error")

    async def check(self):
        raise OSError("disk I/O error")


async def test_health_is_degraded_when_the_store_fails(workspace):
    health = HealthService(BrokenStore(), workspace, ["local/default"], {"local"})
    report = await health.check()
    assert report["status"] == "degraded"
    assert report["store"] == {"ok": False, "backend": "memory", "error": "OSError"}


async def test_diagnostics_report_failures_without_raising(workspace):
    health = HealthService(BrokenStore(), workspace, ["local/default", "openai/gpt-4o"], {"local"})
    report = await health.diagnostics()
    by_name = {c["name"]: c for c in report["checks"]}
    assert report["status"] == "error"
    assert by_name["store"]["status"] == "error" and "OSError" in by_name["store"]["detail"]
    assert by_name["workspace"]["status"] == "ok"
    actors = {a["actor_name"]: a["status"] for a in by_name["actors"]["actors"]}
    assert actors == {"local/default": "ok", "openai/gpt-4o": "warning"}
    assert by_name["actors"]["status"] == "warning"


async def test_a_missing_workspace_is_an_error(tmp_path):
    health = HealthService(MemoryStore(), tmp_path / "gone", [], set())
    report = await health.diagnostics(["workspace", "actors"])
    assert [c["status"] for c in report["checks"]] == ["error", "warning"]
