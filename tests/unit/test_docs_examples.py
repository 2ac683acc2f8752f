"""The examples in the docs run as written."""

import re
from pathlib import Path

from cleveragents.infra.actions import load_actions

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_the_configuration_pages_action_example_loads_and_renders(tmp_path):
    toml = re.search(r"```toml\n(.*?)```", (DOCS / "configuration.md").read_text(), re.S).group(1)
    (tmp_path / ".cleveragents" / "actions").mkdir(parents=True)
    (tmp_path / ".cleveragents" / "actions" / "rename.toml").write_text(toml)
    actions, problems = load_actions(tmp_path)
    assert problems == []
    rename = next(a for a in actions if a.name == "rename")
    (step,) = rename.render(rename.bind({"old": "old", "new": "new"}))
    assert step.tool == "fs.replace"
    assert step.arguments == {"pattern": r"\bold\b", "replacement": "new", "glob": "**/*.py"}
