"""docs/development/acp-to-a2a-migration.md lists every old name the code still takes,
with the name that replaced it."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

from cleveragents.a2a import methods, models

PAGE = Path(__file__).resolve().parents[2] / "docs" / "development" / "acp-to-a2a-migration.md"


def table_after(heading: str) -> list[list[str]]:
    section = PAGE.read_text(encoding="utf-8").split(heading, 1)[1]
    rows = [line for line in section.splitlines() if line.startswith("|")]
    end = next((i for i, line in enumerate(rows[2:], 2) if not line.startswith("| `")), len(rows))
    return [[cell.strip().strip("`") for cell in row.strip("|").split("|")] for row in rows[2:end]]


def test_the_class_table_is_the_acp_modules_renames():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from cleveragents import acp
    assert {old: new for old, new in table_after("## The module and its classes")} == acp._RENAMES


def test_the_field_table_is_what_the_models_accept():
    for model, old, new in table_after("## The envelope's fields"):
        cls = getattr(models, model)
        assert new in cls.model_fields, (model, new)
        assert old not in cls.model_fields, (model, old)
    source = Path(models.__file__).read_text(encoding="utf-8")
    renames = re.findall(r'"(\w+)": "(\w+)"', source)
    listed = {(old, new) for _, old, new in table_after("## The envelope's fields")}
    assert set(renames) == listed


def test_the_method_table_is_the_deprecated_aliases():
    aliases = {spec.name: spec.replaced_by for spec in methods.METHODS.values() if spec.deprecated}
    assert {old: new for old, new in table_after("## Method names")} == aliases
