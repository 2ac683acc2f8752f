"""The configuration file: reading, validation with file/line/key, precedence."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from cleveragents.config import Settings
from cleveragents.domain.errors import ValidationError
from cleveragents.infra.config_file import (
    USER_CONFIG_ENV,
    ConfigError,
    definitions,
    format_key,
    line_of,
    load_config,
    user_config_path,
    workspace_config_path,
)

PROVIDERS = ["a2a", "local", "ollama", "openai", "python"]

GOOD = """\
[defaults]
default_actor = "openai/gpt-4o"
automation_profile = "manual"

[actors."openai/gpt-4o"]
base_url = "http://127.0.0.1:11434/v1"
token_budget = 5000

[actors."team/reviewer"]
provider = "openai"
model = "gpt-4o-mini"
description = "Reviews diffs"
extra_body = { temperature = 0.2 }

[projects.api]
path = "../api"
description = "The API service"

[[resources]]
name = "docs"
type_name = "repository"
uri = "https://example.invalid/docs.git"

[[resources]]
name = "tracker"
type_name = "issues"
uri = "https://example.invalid/issues"
"""


@pytest.fixture
def no_user_file(tmp_path: Path) -> dict[str, str]:
    return {USER_CONFIG_ENV: str(tmp_path / "no-user-config.toml")}


def write(workspace: Path, text: str) -> Path:
    path = workspace_config_path(workspace)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def error_for(workspace: Path, text: str, environ: dict[str, str]) -> ConfigError:
    path = write(workspace, text)
    with pytest.raises(ConfigError) as caught:
        load_config(workspace, PROVIDERS, environ)
    assert caught.value.data["file"] == str(path)
    assert "\n" not in caught.value.message
    return caught.value


# --- the line finder -----------------------------------------------------------------
def test_keys_are_formatted_as_toml_keys():
    assert format_key(["actors", "openai/gpt-4o", "model"]) == 'actors."openai/gpt-4o".model'
    assert format_key(["resources", 1, "uri"]) == "resources[1].uri"
    assert format_key(["defaults"]) == "defaults"


def test_definitions_follow_tables_dotted_keys_and_arrays_of_tables():
    text = textwrap.dedent('''\
        top = 1
        [actors."a/b.c"]
        model = "x"   # = in a comment
        'quoted key' = "y = z"
        [[resources]]
        name = "one"
        [[resources]]
        sub.key = 2
        text = """
        fake = 3
        """
        after = 4
    ''')
    assert definitions(text) == [
        (1, ["top"]), (2, ["actors", "a/b.c"]), (3, ["actors", "a/b.c", "model"]),
        (4, ["actors", "a/b.c", "quoted key"]), (5, ["resources", 0]), (6, ["resources", 0, "name"]),
        (7, ["resources", 1]), (8, ["resources", 1, "sub", "key"]), (9, ["resources", 1, "text"]),
        (12, ["resources", 1, "after"]),
    ]


def test_line_of_finds_the_key_else_its_closest_table():
    text = '[actors."a/b"]\nmodel = "x"\n\n[actors."c/d"]\nmodel = "y"\n'
    assert line_of(text, ["actors", "c/d", "model"]) == 5
    assert line_of(text, ["actors", "c/d", "base_url"]) == 4  # missing: its table
    assert line_of(text, ["actors", "a/b"]) == 1
    assert line_of(text, ["projects", "x"]) is None


# --- good files ----------------------------------------------------------------------
def test_a_complete_file_is_read(tmp_path, no_user_file):
    workspace = tmp_path / "ws"
    write(workspace, GOOD)
    config = load_config(workspace, PROVIDERS, no_user_file)
    source = str(workspace_config_path(workspace))
    assert config.files == (workspace_config_path(workspace),)
    assert config.defaults == {"default_actor": "openai/gpt-4o", "automation_profile": "manual"}
    assert config.actors["openai/gpt-4o"] == {
        "base_url": "http://127.0.0.1:11434/v1", "token_budget": 5000, "provider": "openai", "model": "gpt-4o",
        "source": source,
    }
    assert config.declared_actors()["team/reviewer"] == {
        "provider": "openai", "model": "gpt-4o-mini", "description": "Reviews diffs", "extra_body": {"temperature": 0.2},
    }
    assert config.projects["api"]["path"] == str((tmp_path / "api").resolve())
    assert sorted(config.resources) == ["docs", "tracker"]
    assert config.resources["tracker"] == {"name": "tracker", "type_name": "issues",
                                           "uri": "https://example.invalid/issues", "source": source}


@pytest.mark.parametrize("value", ["[" * 5000 + "]" * 5000, "{ a = " + "[" * 70 + "]" * 70 + " }"])
def test_a_file_nested_too_deep_is_one_line_of_error(tmp_path, no_user_file, value):
    """The registries serve what the file declares (an actor's extra_body): it can't
    hold what no client could read, nor stop the parser."""
    workspace = tmp_path / "ws"
    write(workspace, f'[actors."openai/x"]\nextra_body = {value}\n')
    with pytest.raises(ConfigError) as caught:
        load_config(workspace, PROVIDERS, no_user_file)
    assert caught.value.message.endswith("config.toml: arrays or tables nest deeper than 64 levels")


def test_resources_may_be_named_tables(tmp_path, no_user_file):
    write(tmp_path, '[resources.docs]\ntype_name = "repository"\nuri = "file:///docs"\n')
    assert load_config(tmp_path, PROVIDERS, no_user_file).resources["docs"]["name"] == "docs"


def test_no_files_is_an_empty_configuration(tmp_path, no_user_file):
    config = load_config(tmp_path, PROVIDERS, no_user_file)
    assert (config.files, config.actors, config.projects, config.resources, config.defaults) == ((), {}, {}, {}, {})


# --- bad files -----------------------------------------------------------------------
def test_a_syntax_error_names_the_file_and_line(tmp_path, no_user_file):
    error = error_for(tmp_path, '[defaults]\ndefault_actor = "local/default"\nbroken = \n', no_user_file)
    assert error.data["line"] == 3 and error.data["column"] >= 1
    assert error.message.startswith(f"{workspace_config_path(tmp_path)}:3: ")
    assert isinstance(error, ValidationError)  # answered as -32602 when a request meets it


def test_a_syntax_error_at_the_end_names_the_last_line(tmp_path, no_user_file):
    error = error_for(tmp_path, 'x = [1,\n', no_user_file)
    assert error.data["line"] == 2


def test_an_unknown_key_names_its_line_and_key(tmp_path, no_user_file):
    error = error_for(tmp_path, GOOD.replace('description = "Reviews diffs"', 'descripton = "Reviews diffs"'),
                      no_user_file)
    assert error.data == {"file": str(workspace_config_path(tmp_path)), "key": 'actors."team/reviewer".descripton',
                          "line": 12}
    assert error.message == f'{workspace_config_path(tmp_path)}:12: actors."team/reviewer".descripton: unknown key'


def test_an_unknown_section_and_an_unknown_default_are_named(tmp_path, no_user_file):
    error = error_for(tmp_path, 'x = 1\n[agents.a]\nmodel = "m"\n', no_user_file)
    assert (error.data["key"], error.data["line"]) == ("x", 1)
    error = error_for(tmp_path, '\n[defaults]\nworkspace = "/elsewhere"\n', no_user_file)
    assert (error.data["key"], error.data["line"]) == ("defaults.workspace", 3)


def test_a_wrong_type_names_its_line_and_key(tmp_path, no_user_file):
    error = error_for(tmp_path, GOOD.replace("token_budget = 5000", 'token_budget = "lots"'), no_user_file)
    assert (error.data["key"], error.data["line"]) == ('actors."openai/gpt-4o".token_budget', 7)
    assert "integer" in error.message
    error = error_for(tmp_path, '[defaults]\nautomation_profile = "reckless"\n', no_user_file)
    assert (error.data["key"], error.data["line"]) == ("defaults.automation_profile", 2)
    error = error_for(tmp_path, 'actors = 3\n', no_user_file)
    assert (error.data["key"], error.data["line"]) == ("actors", 1)


def test_a_missing_key_names_its_table(tmp_path, no_user_file):
    error = error_for(tmp_path, GOOD.replace('uri = "https://example.invalid/issues"\n', ""), no_user_file)
    assert (error.data["key"], error.data["line"]) == ("resources[1].uri", 24)
    assert error.message.endswith("resources[1].uri: required key is missing")


def test_actor_names_and_providers_are_checked(tmp_path, no_user_file):
    error = error_for(tmp_path, '[actors.fast]\nmodel = "m"\n', no_user_file)
    assert (error.data["key"], error.data["line"]) == ("actors.fast", 1)
    error = error_for(tmp_path, '[actors."team/x"]\nprovider = "anthropicx"\n', no_user_file)
    assert (error.data["key"], error.data["line"]) == ('actors."team/x".provider', 2)
    assert "known: a2a, local, ollama, openai, python" in error.message
    error = error_for(tmp_path, '[defaults]\ndefault_actor = "nope/model"\n', no_user_file)
    assert error.data["key"] == "defaults.default_actor"


def test_duplicate_resources_are_refused(tmp_path, no_user_file):
    text = '[[resources]]\nname = "a"\ntype_name = "t"\nuri = "u"\n[[resources]]\nname = "a"\ntype_name = "t"\nuri = "v"\n'
    error = error_for(tmp_path, text, no_user_file)
    assert (error.data["key"], error.data["line"]) == ("resources[1].name", 6)


def test_a_file_that_is_not_utf8_is_named(tmp_path, no_user_file):
    path = workspace_config_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"x = '\xff'\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_config(tmp_path, PROVIDERS, no_user_file)


# --- the user's file and precedence -----------------------------------------------------
def test_the_user_file_is_found_by_variable_or_xdg(tmp_path):
    assert user_config_path({USER_CONFIG_ENV: str(tmp_path / "c.toml")}) == tmp_path / "c.toml"
    assert user_config_path({"XDG_CONFIG_HOME": str(tmp_path)}) == tmp_path / "cleveragents" / "config.toml"
    assert user_config_path({}) == Path("~/.config/cleveragents/config.toml").expanduser()


def test_the_workspace_file_overrides_the_users(tmp_path):
    user = tmp_path / "user.toml"
    user.write_text(textwrap.dedent("""\
        [defaults]
        default_actor = "openai/gpt-4o"
        max_terminal_tasks = 50

        [actors."openai/gpt-4o"]
        api_key_env = "MY_KEY"
        base_url = "https://user.invalid/v1"

        [projects.api]
        path = "/srv/api"
        description = "user's"

        [resources.docs]
        type_name = "repository"
        uri = "https://user.invalid/docs"
    """))
    workspace = tmp_path / "ws"
    write(workspace, """\
        [defaults]
        default_actor = "ollama/llama3"

        [actors."openai/gpt-4o"]
        base_url = "http://127.0.0.1:8080/v1"

        [projects.api]
        path = "/srv/api2"
    """)
    config = load_config(workspace, PROVIDERS, {USER_CONFIG_ENV: str(user)})
    assert config.files == (user, workspace_config_path(workspace))
    assert config.defaults == {"default_actor": "ollama/llama3", "max_terminal_tasks": 50}
    # Actors merge key by key; projects are replaced whole.
    assert config.declared_actors()["openai/gpt-4o"] == {
        "api_key_env": "MY_KEY", "base_url": "http://127.0.0.1:8080/v1", "provider": "openai", "model": "gpt-4o"}
    assert config.projects["api"] == {"path": "/srv/api2", "source": str(workspace_config_path(workspace))}
    assert config.resources["docs"]["source"] == str(user)


def test_a_bad_user_file_is_named(tmp_path):
    user = tmp_path / "user.toml"
    user.write_text("[projects.x]\npath = 3\n")
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path, PROVIDERS, {USER_CONFIG_ENV: str(user)})
    assert caught.value.message.startswith(f"{user}:2: projects.x.path: ")


def test_settings_take_file_defaults_below_the_environment(monkeypatch):
    monkeypatch.setenv("CLEVERAGENTS_MAX_TERMINAL_TASKS", "10000")  # explicitly the built-in value
    settings = Settings.from_env()
    merged = settings.with_file_defaults({"max_terminal_tasks": 7, "default_actor": "openai/gpt-4o",
                                          "automation_profile": "autonomous"})
    assert merged.max_terminal_tasks == 10000  # the environment wins
    assert (merged.default_actor, merged.automation_profile) == ("openai/gpt-4o", "autonomous")
    # A value given in code (not the built-in one) wins too.
    assert Settings(default_actor="python/m:f").with_file_defaults({"default_actor": "openai/x"}).default_actor == "python/m:f"


def test_the_default_actor_may_be_declared_in_the_other_file(tmp_path):
    user = tmp_path / "user.toml"
    user.write_text('[actors."team/reviewer"]\nprovider = "openai"\nmodel = "gpt-4o-mini"\n')
    workspace = tmp_path / "ws"
    path = write(workspace, '[defaults]\n\ndefault_actor = "team/reviewer"\n')
    config = load_config(workspace, PROVIDERS, {USER_CONFIG_ENV: str(user)})
    assert config.defaults["default_actor"] == "team/reviewer"
    with pytest.raises(ConfigError) as caught:
        load_config(workspace, PROVIDERS, {USER_CONFIG_ENV: str(tmp_path / "none.toml")})
    assert caught.value.data == {"file": str(path), "key": "defaults.default_actor", "line": 3}


def test_the_shell_policy_is_read_merged_and_checked(tmp_path):
    user = tmp_path / "user.toml"
    user.write_text('[shell]\nallow = ["git status", "python -m pytest"]\nenv = ["JAVA_HOME"]\n')
    workspace = tmp_path / "ws"
    write(workspace, '[shell]\nallow = ["make test", "python3 -c"]\n')
    config = load_config(workspace, PROVIDERS, {USER_CONFIG_ENV: str(user)})
    # Key by key: the workspace's allow-list replaces the user's; the user's env stays.
    assert config.tool_settings() == {"shell_allow": ["make test", "python3 -c"], "shell_env": ["JAVA_HOME"]}
    environ = {USER_CONFIG_ENV: str(tmp_path / "none.toml")}
    for text, key, line in (('[shell]\nallow = ["/bin/sh -c"]\n', "shell.allow[0]", 2),
                            ('[shell]\nallow = ["git \'unclosed"]\n', "shell.allow[0]", 2),
                            ('[shell]\nallow = [""]\n', "shell.allow[0]", 2),
                            ('[shell]\nenv = ["NOT-A-NAME"]\n', "shell.env[0]", 2),
                            ('[shell]\nallowed = ["git"]\n', "shell.allowed", 2)):
        error = error_for(workspace, text, environ)
        assert (error.data["key"], error.data["line"]) == (key, line), (text, error.message)


def test_settings_take_paths_as_strings(tmp_path):
    settings = Settings(workspace=str(tmp_path), state_dir=str(tmp_path / "state"))
    assert settings.resolved_workspace == tmp_path.resolve()
    assert settings.resolved_state_dir == (tmp_path / "state").resolve()
    assert Settings.from_env(workspace=str(tmp_path)).workspace == tmp_path
