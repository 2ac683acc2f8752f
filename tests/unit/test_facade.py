import asyncio
import logging

import pytest

from cleveragents.a2a import A2ALocalFacade, A2ARequest
from cleveragents.config import Settings
from cleveragents.container import Container


@pytest.fixture
def container(workspace):
    c = Container(Settings(workspace=workspace))
    yield c
    c.close()


def test_the_sync_example_with_a_service_map_runs_as_written(container):
    session_svc = container.session_service
    event_queue = container.event_queue
    facade = A2ALocalFacade(services={
        "session_service": session_svc,
        "plan_lifecycle_service": None,
        "tool_registry": None,
        "event_queue": event_queue,
    })
    response = facade.dispatch(A2ARequest(method="session.create", params={"actor_name": "openai/gpt-4o"}))
    session_id = response.result["session_id"]
    assert response.result == {"session_id": session_id, "status": "created", "actor_name": "openai/gpt-4o",
                               "created_at": response.result["created_at"]}
    response = facade.dispatch(A2ARequest(method="session.close", params={"session_id": session_id}))
    assert response.result["status"] == "closed"
    # "Plan Lifecycle via Extension Methods": no plan service here, so a clear error.
    response = facade.dispatch(A2ARequest(method="_cleveragents/plan/use",
                                          params={"action_name": "refactor-auth", "arguments": {"target": "src/auth"}}))
    assert response.error.code == -32004 and response.error.data["service"] == "plan_lifecycle_service"
    facade.close()


async def test_the_async_example_with_a_container_runs_as_written(container):
    facade = A2ALocalFacade(container)
    response = await facade.dispatch(A2ARequest(method="session.create", params={"actor": "openai/gpt-4o"}))
    if response.result is not None:
        session_id = response.result["session_id"]
    elif response.error is not None:
        raise RuntimeError(response.error.message)
    assert (await facade.dispatch(A2ARequest(method="session.get", params={"session_id": session_id}))).ok


async def test_a_pending_response_can_be_awaited_once_and_read_twice(container):
    facade = A2ALocalFacade(container)
    pending = facade.dispatch(A2ARequest(method="_cleveragents/health/check"))
    first = await pending
    assert await pending is first
    with pytest.raises(RuntimeError, match="await"):
        facade.dispatch_sync(A2ARequest(method="_cleveragents/health/check"))


def test_an_empty_facade_names_every_missing_service():
    from cleveragents.a2a import methods

    facade = A2ALocalFacade()
    for spec in methods.METHODS.values():
        response = facade.dispatch_sync({"jsonrpc": "2.0", "id": 1, "method": spec.name, "params": spec.example})
        assert response.error is not None, spec.name
        if response.error.code == -32602:  # examples with placeholder ids may not validate
            continue
        assert response.error.code == -32004, (spec.name, response.error)
        data = response.error.data
        detail = data[0]["metadata"] if isinstance(data, list) else data
        assert detail["service"] == spec.service
    facade.close()


def test_unknown_methods_return_an_error_and_raise_nothing():
    facade = A2ALocalFacade()
    response = facade.dispatch_sync(A2ARequest(method="plan.frobnicate"))
    assert response.error.code == -32601 and response.error.data == {"method": "plan.frobnicate"}
    facade.close()


def test_deprecated_aliases_log_once(container, caplog):
    facade = A2ALocalFacade(container)
    with caplog.at_level(logging.WARNING, logger="cleveragents.a2a.facade"):
        for _ in range(3):
            facade.dispatch_sync(A2ARequest(method="event.subscribe"))
    warnings = [r for r in caplog.records if "deprecated" in r.getMessage()]
    assert len(warnings) == 1 and "_cleveragents/event/subscribe" in warnings[0].getMessage()
    facade.close()


class Exploding:
    async def check(self):
        raise RuntimeError("/home/user/secret went wrong")


def test_a_bug_is_a_bare_internal_error_with_an_id(caplog):
    facade = A2ALocalFacade(services={"health_service": Exploding()})
    with caplog.at_level(logging.ERROR):
        response = facade.dispatch_sync(A2ARequest(method="_cleveragents/health/check"))
    assert response.error.code == -32603
    assert response.error.message == "Internal error"
    error_id = response.error.data["error_id"]
    assert any(error_id in r.getMessage() and r.exc_info for r in caplog.records)
    assert "secret" not in response.model_dump_json()
    facade.close()


def test_the_facade_accepts_a_container_or_a_mapping(container):
    assert set(A2ALocalFacade(container).services) == set(container.services)
    with pytest.raises(TypeError):
        A2ALocalFacade(42)


async def test_concurrent_idempotent_creates_make_one_session(container):
    facade = A2ALocalFacade(container)
    responses = await asyncio.gather(*(
        facade.dispatch(A2ARequest(method="session.create", params={"session_id": "same"})) for _ in range(20)
    ))
    assert sorted(r.result["status"] for r in responses).count("created") == 1
    listed = await facade.dispatch(A2ARequest(method="session.list"))
    assert listed.result["total"] == 1


def test_outside_an_event_loop_a_request_runs_though_its_answer_is_never_read(container):
    facade = A2ALocalFacade(container)
    facade.dispatch(A2ARequest(method="session.create", params={"actor_name": "local/default"}))  # not read
    listed = facade.dispatch(A2ARequest(method="session.list")).result
    assert len(listed["sessions"]) == 1, listed
