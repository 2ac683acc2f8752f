"""The classes are spelled ``A2A*``; the earlier ``A2a*`` names still import, from the
same modules, as the same classes."""

from __future__ import annotations

import importlib

import pytest

EARLIER_NAMES = {
    "cleveragents.a2a.models": ["A2aRequest", "A2aResponse", "A2aErrorDetail", "A2aEvent"],
    "cleveragents.a2a.facade": ["A2aLocalFacade"],
    "cleveragents.a2a.events": ["A2aEventQueue"],
    "cleveragents.a2a.errors": ["A2aError", "A2aNotAvailableError", "A2aOperationNotFoundError",
                                "A2aVersionMismatchError"],
    "cleveragents.a2a.version": ["A2aVersionNegotiator"],
}


@pytest.mark.parametrize(("module", "earlier"), [(m, n) for m, names in EARLIER_NAMES.items() for n in names])
def test_an_earlier_name_is_the_class_of_the_new_name(module: str, earlier: str) -> None:
    loaded = importlib.import_module(module)
    current = getattr(loaded, earlier.replace("A2a", "A2A", 1))
    assert isinstance(current, type) and current.__name__.startswith("A2A")
    assert getattr(loaded, earlier) is current
    assert getattr(importlib.import_module("cleveragents.a2a"), earlier) is current


def test_the_package_lists_both_spellings_and_no_other_class_keeps_the_old_one() -> None:
    package = importlib.import_module("cleveragents.a2a")
    earlier = {name for name in dir(package) if name.startswith("A2a")}
    assert earlier == {name for names in EARLIER_NAMES.values() for name in names}
    assert {name.replace("A2a", "A2A", 1) for name in earlier} <= set(dir(package))
