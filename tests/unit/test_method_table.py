"""The method table: both dialects of the standard methods, the legacy aliases, and,
when the documents the project was specified with sit beside the checkout, every
extension method they name."""

import re
from pathlib import Path

from cleveragents.a2a import dialects, methods, params

# The input documents (plain text) the project was specified with; absent in most checkouts.
SOURCE_DOCS = Path(__file__).resolve().parents[2].parent / "shared" / "seeds"

STANDARD_V1 = ["SendMessage", "SendStreamingMessage", "GetTask", "ListTasks", "CancelTask", "SubscribeToTask",
               "CreateTaskPushNotificationConfig", "GetTaskPushNotificationConfig",
               "ListTaskPushNotificationConfigs", "DeleteTaskPushNotificationConfig", "GetExtendedAgentCard"]
STANDARD_V03 = ["message/send", "message/stream", "tasks/get", "tasks/list", "tasks/cancel", "tasks/resubscribe",
                "tasks/subscribe", "tasks/pushNotificationConfig/set", "tasks/pushNotificationConfig/get",
                "tasks/pushNotificationConfig/list", "tasks/pushNotificationConfig/delete",
                "agent/getAuthenticatedExtendedCard", "agent/getExtendedCard", "getExtendedAgentCard"]
LEGACY = ["plan.create", "plan.execute", "plan.status", "plan.diff", "plan.apply", "registry.list_tools",
          "registry.list_resources", "context.get", "event.subscribe"]


def test_standard_methods_in_both_dialects():
    for name in STANDARD_V1:
        assert methods.METHODS[name].dialect == dialects.A2A_V1
    for name in STANDARD_V03:
        assert methods.METHODS[name].dialect == dialects.A2A_V03
    # Each 0.3 name serves the same operation as a 1.0 name.
    calls_v1 = {(s.service, s.call) for s in methods.METHODS.values() if s.dialect == dialects.A2A_V1}
    assert {(methods.METHODS[n].service, methods.METHODS[n].call) for n in STANDARD_V03} <= calls_v1


def test_legacy_names_are_deprecated_aliases():
    for name in LEGACY:
        spec = methods.METHODS[name]
        target = methods.METHODS[spec.replaced_by]
        assert spec.deprecated and spec.dialect == dialects.LEGACY
        assert (spec.params, spec.service, spec.call) == (target.params, target.service, target.call)


def test_every_specified_method_is_in_the_table():
    """Each `_cleveragents/...` method the input documents name is served, and the session
    methods always are. Without the documents only the session methods are checked."""
    text = "\n".join(p.read_text() for p in sorted(SOURCE_DOCS.glob("*.txt"))) if SOURCE_DOCS.is_dir() else ""
    named = set(re.findall(r"_cleveragents/[a-z_]+(?:/[a-z_]+)+", text)) - {"_cleveragents/plan/event"}
    named |= {"session.create", "session.close"}
    wildcard = {n for n in named if n.endswith("/")}
    assert not wildcard
    assert named - set(methods.METHODS) == set()
    if SOURCE_DOCS.is_dir():  # they list 32 extension methods; the table adds event/unsubscribe
        assert len({n for n in named if n.startswith("_cleveragents/")}) == 32


def test_every_entry_names_a_real_params_model_and_valid_errors():
    from cleveragents.a2a import errors

    for spec in methods.METHODS.values():
        assert hasattr(params, spec.params), spec.name
        assert spec.dialect in dialects.ALL
        for name in spec.errors:
            assert hasattr(errors, name), (spec.name, name)
        assert spec.summary and spec.result


def test_every_entry_is_bound_to_its_params_model_and_a_handler_on_its_service():
    """The typed side of the table: each operation's binding validates into the model
    the table names and calls a method the object serving its key has, with a
    signature that takes what the binding passes, the model or its fields (the checker
    holds the rest)."""
    import inspect

    from cleveragents.a2a.bindings import BINDINGS

    operations = {(s.service, s.call) for s in methods.METHODS.values()}
    assert operations == set(BINDINGS)
    for spec in methods.METHODS.values():
        binding = BINDINGS[spec.service, spec.call]
        assert binding.params is getattr(params, spec.params), spec.name
        handler = getattr(binding.serves, spec.call, None)
        assert callable(handler), spec.name
        accepted = inspect.signature(handler, eval_str=True).parameters
        takes_model = any(isinstance(p.annotation, type) and issubclass(binding.params, p.annotation)
                          for p in accepted.values())
        assert takes_model or set(binding.params.model_fields) <= set(accepted), spec.name
        assert not spec.with_context or "context" in accepted, spec.name


def test_reading_the_table_loads_neither_the_params_models_nor_the_services():
    """The stdio server reads the table before it answers `initialize`."""
    import subprocess
    import sys

    probe = ("import sys, cleveragents.a2a.methods, cleveragents.transports.lsp.server; "
             "print(sorted(m for m in ('cleveragents.a2a.params', 'cleveragents.a2a.bindings', "
             "'cleveragents.app.plans', 'pydantic') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_advertised_services_are_the_ones_a_container_builds():
    """The servers advertise from ``BUILT_IN_SERVICES`` before the services load."""
    from cleveragents.config import Settings
    from cleveragents.container import Container

    container = Container(Settings(memory=True))
    try:
        assert set(container.services) == methods.BUILT_IN_SERVICES
    finally:
        container.close()
    assert not {"sync_service", "namespace_service"} & methods.BUILT_IN_SERVICES
    assert not [n for n in methods.extension_method_names() if n.startswith(("_cleveragents/sync/",
                                                                            "_cleveragents/namespace/"))]
