"""The path guards and the plan limits (domain.guards): pure rules, no files."""

import pytest

from cleveragents.domain.errors import AuthorizationError, ValidationError
from cleveragents.domain.guards import GuardPolicy, normalize


@pytest.mark.parametrize(("given", "cleaned"), [
    ("a/./b", "a/b"),
    ("a//b/", "a/b"),
    ("./x.py", "x.py"),
    ("a/b/../c", "a/c"),
    ("src\\pkg\\m.py", "src/pkg/m.py"),
])
def test_normalize_cleans_relative_paths(given, cleaned):
    assert normalize(given) == cleaned


@pytest.mark.parametrize(("given", "reason"), [
    ("../x", "outside_workspace"),
    ("a/../../x", "outside_workspace"),
    ("..\\..\\etc\\passwd", "outside_workspace"),
    ("/etc/passwd", "absolute_path"),
    ("C:/Windows/win.ini", "absolute_path"),
    ("C:\\Windows", "absolute_path"),
    ("", "invalid_path"),
    (".", "invalid_path"),
    ("a/..", "invalid_path"),
    ("a\x00b", "invalid_path"),
])
def test_normalize_refuses_paths_that_are_not_inside_the_workspace(given, reason):
    with pytest.raises(AuthorizationError) as caught:
        normalize(given)
    assert caught.value.data == {"path": given, "reason": reason}


@pytest.mark.parametrize("path", [".git/config", ".git", "sub/.git/HEAD", ".cleveragents/state.db", ".GIT/config"])
def test_protected_paths_are_refused_for_reads_and_writes(path):
    policy = GuardPolicy()
    for write in (False, True):
        with pytest.raises(AuthorizationError) as caught:
            policy.check(path, write=write)
        assert caught.value.data["reason"] == "protected"
        assert caught.value.data["access"] == ("write" if write else "read")


def test_cleveragents_is_protected_only_at_the_top():
    assert GuardPolicy().check("docs/.cleveragents/notes.md", write=True) == "docs/.cleveragents/notes.md"


@pytest.mark.parametrize("path", [".env", "app/.env.local", ".env.example", "certs/server.pem", "a/b.key", "id_rsa",
                                  "id_rsa.pub", "id_ed25519", "keys/id_ecdsa", "bundle.p12", "CONFIG/.ENV", "tools/.envrc"])
def test_protected_paths_are_refused(path):
    with pytest.raises(AuthorizationError) as caught:
        GuardPolicy().check(path, write=False)
    assert caught.value.data == {"path": path, "reason": "protected_path", "access": "read"}


@pytest.mark.parametrize("path", [".git/config", "vendor/lib/.git/config", ".git/hooks/pre-commit", ".git/hooks",
                                  "sub/.git/hooks/post-checkout"])
def test_repository_config_and_hooks_are_on_the_protected_paths_list(path):
    """Commands see ``.git`` but never these: a config or a hook runs code for git."""
    directory = path.endswith("hooks")
    assert GuardPolicy().matches_protected_path(path, directory=directory)
    assert not GuardPolicy().matches_protected_path(".git/HEAD")


def test_a_directory_matched_by_a_pattern_is_protected_whole():
    policy = GuardPolicy().with_overrides(protected_paths=["secrets/"])
    assert policy.matches_protected_path("secrets", directory=True)
    assert not policy.matches_protected_path("secrets")  # a file of that name is not the directory
    assert policy.check("src/secrets.py", write=True) == "src/secrets.py"
    with pytest.raises(AuthorizationError):
        policy.check("app/secrets/token.txt", write=False)


def test_a_negated_pattern_takes_a_path_off_the_list():
    policy = GuardPolicy().with_overrides(protected_paths=(*GuardPolicy().protected_paths, "!.env.example"))
    assert policy.check(".env.example", write=True) == ".env.example"
    with pytest.raises(AuthorizationError):
        policy.check(".env", write=True)


@pytest.mark.parametrize("path", ["environment.py", "keys/readme.md", "src/env.md", "monkey.py", "src/ids.py"])
def test_ordinary_paths_pass(path):
    assert GuardPolicy().check(path, write=True) == path


def test_check_returns_the_normalized_path_and_still_refuses_through_dots():
    policy = GuardPolicy()
    assert policy.check("src/./a.py", write=False) == "src/a.py"
    with pytest.raises(AuthorizationError):
        policy.check("src/../.git/config", write=False)


def test_policy_from_settings_overrides_defaults_and_checks_them():
    policy = GuardPolicy.from_settings({"max_files_changed": 3, "protected": ["build"], "protected_paths": []})
    assert (policy.max_files_changed, policy.protected, policy.protected_paths) == (3, ("build",), ())
    assert policy.max_steps == GuardPolicy().max_steps
    assert policy.check(".env", write=True) == ".env"
    with pytest.raises(AuthorizationError):
        policy.check("build/out.js", write=False)
    with pytest.raises(ValidationError) as unknown:
        GuardPolicy().with_overrides(max_file=1)
    assert unknown.value.data == {"field": "max_file", "reason": "unknown"}
    with pytest.raises(ValidationError) as wrong:
        GuardPolicy().with_overrides(max_bytes_written="lots")
    assert wrong.value.data["field"] == "max_bytes_written"
    with pytest.raises(ValidationError):
        GuardPolicy().with_overrides(protected=".git")


def test_extra_protected_paths_can_be_added_in_any_spelling():
    """The composition root adds the state dir when it lies in the workspace."""
    base = GuardPolicy()
    policy = base.with_overrides(protected=(*base.protected, "./var/state/", "build\\cache"))
    assert policy.protected == (".git", ".cleveragents", "var/state", "build/cache")
    for path in ("var/state/journal/p1.json", "var/state", "VAR/State/blobs/ab", "build/cache/x", ".git/config"):
        with pytest.raises(AuthorizationError) as refused:
            policy.check(path, write=True)
        assert refused.value.data["reason"] == "protected"
    assert policy.check("var/statement.txt", write=True) == "var/statement.txt"
    assert base.check("var/state/db", write=True) == "var/state/db"  # the original is unchanged


@pytest.mark.parametrize(("entry", "reason"), [("/srv/state", "absolute_path"), ("../state", "outside_workspace"),
                                               (".", "invalid_path")])
def test_a_protected_path_outside_the_workspace_is_refused_without_echoing_it(entry, reason):
    with pytest.raises(ValidationError) as refused:
        GuardPolicy().with_overrides(protected=[".git", entry])
    assert refused.value.data == {"field": "protected", "index": 1, "reason": reason}


def test_max_read_bytes_is_a_setting():
    assert GuardPolicy().max_read_bytes == 32 * 1024 * 1024
    assert GuardPolicy.from_settings({"max_read_bytes": 1024}).max_read_bytes == 1024
