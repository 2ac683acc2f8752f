"""docs/protocol.md is generated from the method table and must not drift from it."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

from cleveragents.a2a.methods import METHODS

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gen_protocol_docs.py"
DOC = ROOT / "docs" / "protocol.md"


@pytest.fixture(scope="module")
def gen() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_protocol_docs", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def rendered(gen: ModuleType) -> str:
    return gen.render()


def test_committed_docs_match_the_generator(rendered: str) -> None:
    assert DOC.exists(), "docs/protocol.md is missing; run: python scripts/gen_protocol_docs.py"
    assert DOC.read_text(encoding="utf-8") == rendered, (
        "docs/protocol.md is out of date; run: python scripts/gen_protocol_docs.py"
    )


def test_every_method_has_a_heading(rendered: str) -> None:
    headings = [line for line in rendered.splitlines() if re.match(r"^#{2,4} ", line)]
    missing = [name for name in METHODS if not any(f"`{name}`" in h for h in headings)]
    assert not missing, f"methods without a heading in docs/protocol.md: {missing}"


def test_render_is_deterministic(gen: ModuleType, rendered: str) -> None:
    assert gen.render() == rendered


def test_status_follows_the_configured_services(gen: ModuleType) -> None:
    served = gen.render(services={"session_service.create"})
    section = served.split("### `session.create`", 1)[1].split("\n### ", 1)[0]
    assert "Status: served" in section
    unserved = gen.render(services=set())
    section = unserved.split("### `session.create`", 1)[1].split("\n### ", 1)[0]
    assert "not served yet in this build" in section and "`session_service`" in section


def test_check_mode_passes_on_the_committed_docs(gen: ModuleType) -> None:
    assert gen.main(["--check"]) == 0
