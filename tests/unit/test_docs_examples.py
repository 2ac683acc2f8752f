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


def test_the_configuration_pages_config_file_example_loads(tmp_path):
    from cleveragents.infra.actors.resolve import known_providers
    from cleveragents.infra.config_file import USER_CONFIG_ENV, load_config, workspace_config_path

    section = (DOCS / "configuration.md").read_text().split("## The configuration file", 1)[1]
    toml = re.search(r"```toml\n(.*?)```", section, re.S).group(1)
    path = workspace_config_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(toml)
    config = load_config(tmp_path, known_providers(), {USER_CONFIG_ENV: str(tmp_path / "none.toml")})
    assert sorted(config.actors) == ["openai/gpt-4o", "team/reviewer"]
    assert config.defaults["default_actor"] == "openai/gpt-4o"
    assert list(config.projects) == ["api"] and list(config.resources) == ["docs"]
