import pytest

from cleveragents.a2a import dialects
from cleveragents.a2a.errors import (
    A2A_ERROR_CODES,
    EXTENSION_ERROR_CODES,
    A2AError,
    A2ANotAvailableError,
    A2AOperationNotFoundError,
    A2AVersionMismatchError,
    AuthenticationError,
    AuthorizationError,
    BudgetExceededError,
    BusinessRuleViolation,
    DuplicateEntityError,
    PlanError,
    ResourceNotFoundError,
    TaskNotCancelableError,
    TaskNotFoundError,
    ValidationError,
    error_payload,
)
from cleveragents.a2a.version import A2AVersionNegotiator

SPECIFIED_CODES = {  # the extension error codes, as the project specifies them
    ResourceNotFoundError: -32001, AuthenticationError: -32002, AuthorizationError: -32003,
    BusinessRuleViolation: -32004, DuplicateEntityError: -32005, BudgetExceededError: -32006,
    A2AVersionMismatchError: -32007, PlanError: -32008, ValidationError: -32602,
    A2AOperationNotFoundError: -32601,
}


@pytest.mark.parametrize("cls,code", SPECIFIED_CODES.items(), ids=lambda v: getattr(v, "__name__", str(v)))
def test_extension_table_matches_the_specified_codes(cls, code):
    exc = cls("x") if cls is not A2AOperationNotFoundError else cls("m")
    assert EXTENSION_ERROR_CODES[cls] == code
    assert error_payload(exc, dialects.EXTENSION)["code"] == code
    assert error_payload(exc, dialects.LEGACY)["code"] == code


def test_spec_table_for_standard_methods():
    assert A2A_ERROR_CODES[TaskNotFoundError] == (-32001, "TASK_NOT_FOUND")
    assert error_payload(TaskNotCancelableError(), dialects.A2A_V03)["code"] == -32002
    assert error_payload(A2AVersionMismatchError(), dialects.A2A_V03)["code"] == -32009
    assert error_payload(A2ANotAvailableError(), dialects.A2A_V03)["code"] == -32004
    # Authentication has no spec code; it must not reuse -32002 (TaskNotCancelable).
    assert error_payload(AuthenticationError(), dialects.A2A_V03)["code"] == -32600


def test_v1_errors_carry_an_error_info():
    payload = error_payload(TaskNotFoundError("Task not found", {"id": "t1", "n": 3}), dialects.A2A_V1)
    assert payload == {
        "code": -32001, "message": "Task not found",
        "data": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND",
                  "domain": "a2a-protocol.org", "metadata": {"id": "t1", "n": "3"}}],
    }


def test_unknown_exceptions_are_internal_and_say_nothing():
    payload = error_payload(KeyError("/secret/path"), dialects.EXTENSION)
    assert payload == {"code": -32603, "message": "Internal error"}


def test_operation_not_found_keeps_the_operation():
    exc = A2AOperationNotFoundError("plan.frobnicate")
    assert exc.operation == "plan.frobnicate" and isinstance(exc, A2AError)


@pytest.mark.parametrize("given,expected", [("1.0", "1.0"), ("1.0.1", "1.0"), ("0.3.0", "0.3"), ("1", "1.0"),
                                            ("v1.0", "1.0"), ("2.0, 0.3", "0.3"), (["0.3", "1.0"], "1.0"),
                                            (None, "1.0"), ("", "1.0")])
def test_negotiator_picks_a_supported_version(given, expected):
    assert A2AVersionNegotiator().negotiate(given) == expected


@pytest.mark.parametrize("given", ["2.0", "0.2", "banana", "1.0.0.0", "1.x"])
def test_negotiator_refuses_unknown_versions(given):
    with pytest.raises(A2AVersionMismatchError) as info:
        A2AVersionNegotiator().negotiate(given)
    assert "supported" in info.value.data or "requested" in info.value.data


def test_negotiator_dialects():
    negotiator = A2AVersionNegotiator(supported=["0.3"], default="0.3")
    assert negotiator.negotiate() == "0.3" and not negotiator.is_supported("1.0")
    assert A2AVersionNegotiator.dialect_for("1.0") == dialects.A2A_V1
    with pytest.raises(ValueError):
        A2AVersionNegotiator(supported=["1.0"], default="0.3")
