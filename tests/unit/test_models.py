import json
import warnings

import pytest
from pydantic import ValidationError

from cleveragents.a2a.models import A2AErrorDetail, A2AEvent, A2ARequest, A2AResponse
from cleveragents.ids import is_ulid


def test_request_makes_a_ulid_id_when_omitted_or_empty():
    assert is_ulid(A2ARequest(method="session.create").id)
    assert is_ulid(A2ARequest(method="session.create", id="").id)
    assert A2ARequest(method="x", id=7).id == 7
    first, second = A2ARequest(method="x").id, A2ARequest(method="x").id
    assert first < second


@pytest.mark.parametrize("bad", [{"method": ""}, {"method": "  "}, {"method": "x", "jsonrpc": "1.0"},
                                 {"method": "x", "id": True}, {"method": "x", "params": [1]}, {}])
def test_request_rejects_bad_envelopes(bad):
    with pytest.raises(ValidationError):
        A2ARequest(**bad)


def test_response_is_result_xor_error():
    assert A2AResponse(id=1, result=None).to_wire() == {"jsonrpc": "2.0", "id": 1, "result": None}
    err = A2AResponse(id=1, error=A2AErrorDetail(code=-32001, message="Plan not found", data={"plan_id": "p"}))
    assert err.to_wire() == {"jsonrpc": "2.0", "id": 1,
                             "error": {"code": -32001, "message": "Plan not found", "data": {"plan_id": "p"}}}
    assert A2AResponse(id=1, error={"code": 1, "message": "m"}).to_wire()["error"] == {"code": 1, "message": "m"}
    with pytest.raises(ValidationError):
        A2AResponse(id=1)
    with pytest.raises(ValidationError):
        A2AResponse(id=1, result={}, error={"code": 1, "message": "m"})


def test_legacy_field_names_are_accepted_with_a_warning():
    with pytest.warns(DeprecationWarning) as caught:
        request = A2ARequest(operation="session.create", payload={"a": 1}, request_id="r1", a2a_version="2.0")
    assert {str(w.message).split(" ")[0] for w in caught} == {
        "A2ARequest.operation", "A2ARequest.payload", "A2ARequest.request_id", "A2ARequest.a2a_version"}
    assert (request.method, request.params, request.id, request.jsonrpc) == ("session.create", {"a": 1}, "r1", "2.0")
    with pytest.warns(DeprecationWarning):
        response = A2AResponse(request_id="r1", data={"ok": True})
    assert response.result == {"ok": True} and response.id == "r1"
    with pytest.warns(DeprecationWarning):
        failed = A2AResponse(request_id="r1", error_detail={"code": -32601, "message": "nope"})
    assert failed.error.code == -32601


def test_current_names_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        A2ARequest(method="x", params={"payload": 1})
        A2AResponse(id=1, result={"data": 1})


def test_event_defaults_and_utc_timestamps():
    event = A2AEvent(event_type="TaskStatusUpdateEvent", plan_id="p", data={"state": "working"})
    assert is_ulid(event.event_id) and event.timestamp.endswith("Z")
    assert (event.type, event.payload) == ("TaskStatusUpdateEvent", {"state": "working"})
    shifted = A2AEvent(event_type="T", timestamp="2026-01-01T02:00:00+02:00")
    assert shifted.timestamp == "2026-01-01T00:00:00.000Z"
    with pytest.raises(ValidationError):
        A2AEvent(event_type="T", timestamp="2026-01-01T00:00:00")  # no offset
    with pytest.raises(ValidationError):
        A2AEvent(event_type="T", timestamp="0001-01-01T00:00:00+01:00")  # UTC has no year 0
    with pytest.raises(ValidationError):
        A2AEvent(event_type=" ")
    assert set(event.to_wire()) == {"event_id", "event_type", "plan_id", "data", "timestamp"}


def test_acp_module_reexports_the_renamed_names():
    import importlib
    import sys

    sys.modules.pop("cleveragents.acp", None)
    with pytest.warns(DeprecationWarning):
        acp = importlib.import_module("cleveragents.acp")
    import cleveragents.a2a as a2a

    assert acp.AcpRequest is a2a.A2ARequest and acp.AcpLocalFacade is a2a.A2ALocalFacade
    assert acp.AcpEventQueue is a2a.A2AEventQueue and acp.AcpError is a2a.A2AError
    with pytest.raises(AttributeError):
        _ = acp.AcpNothing


def test_a_response_is_json_text_even_with_text_utf_8_cannot_carry():
    from cleveragents.a2a.models import A2AResponse

    plain = A2AResponse(id=1, result={"text": "héllo", "n": 2})
    assert json.loads(plain.to_json()) == plain.to_wire() and "héllo" in plain.to_json()
    lone = A2AResponse(id=2, result={"text": "bad \udc80 byte"})  # a file read with surrogateescape
    assert json.loads(lone.to_json()) == lone.to_wire()
    assert A2AResponse(id=3, result={"x": float("nan")}).to_json().endswith('"result":{"x":null}}')


def test_an_error_detail_without_data_has_an_empty_dict_left_off_the_wire():
    detail = A2AErrorDetail(code=-32001, message="Not found")
    assert detail.data == {}
    assert A2AErrorDetail(code=1, message="m", data=None).data == {}
    assert detail.model_dump(mode="json") == {"code": -32001, "message": "Not found"}
    # Each detail gets a dict of its own.
    detail.data["x"] = 1  # type: ignore[index]
    assert A2AErrorDetail(code=1, message="m").data == {}
    # The 1.0 dialect's data is a list of error details.
    info = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND"}]
    assert A2AErrorDetail(code=-32001, message="m", data=info).model_dump()["data"] == info


@pytest.mark.parametrize("result", [None, {"status": "ok", "n": [1, 2]}, "text", 0])
def test_a_result_response_built_fast_is_the_model_pydantic_builds(result):
    fast = A2AResponse.of_result(7, result)
    built = A2AResponse(id=7, result=result)
    assert fast == built and fast.model_fields_set == built.model_fields_set
    assert fast.to_wire() == built.to_wire() and fast.json_bytes() == built.json_bytes()
    assert fast.ok and fast.model_copy(update={"id": 8}).id == 8
    assert fast.__pydantic_private__ == built.__pydantic_private__
    fast.keep_encoded(b"{}")
    assert fast.json_bytes() == b"{}" and built.json_bytes() != b"{}"  # each keeps its own
