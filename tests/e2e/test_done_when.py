"""The foundation's acceptance flow, in one piece, against a real server process:
initialize, create a session, subscribe, close it, restart, see it again."""

from tests.contract.runners import StdioRunner


async def test_the_editor_flow_survives_a_restart(workspace):
    runner = StdioRunner(workspace)
    await runner.start()
    try:
        a2a = runner.initialize_result.capabilities.experimental["a2a"]
        assert "session.create" in a2a["methods"]["extension"]

        created = (await runner.call("session.create", {"actor_name": "local/default"}))["result"]
        subscribed, events = await runner.subscribe({})
        assert subscribed["result"]["live"] is True
        closed = (await runner.call("session.close", {"session_id": created["session_id"]}))["result"]
        event = await events.next()
        assert event["data"] == {"domain_event": "SESSION_CLOSED", "status": "closed",
                                 "session_id": created["session_id"]}

        await runner.restart()
        again = (await runner.call("session.get", {"session_id": created["session_id"]}))["result"]
        assert again["status"] == "closed" and again["closed_at"] == closed["closed_at"]
        listed = (await runner.call("session.list", {}))["result"]
        assert [s["session_id"] for s in listed["sessions"]] == [created["session_id"]]
    finally:
        await runner.close()
    assert (workspace / ".cleveragents" / "state.db").is_file()
