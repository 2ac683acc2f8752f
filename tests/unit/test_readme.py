"""The README's Python examples run as written."""

import re
import subprocess
import sys

import pytest

from tests.conftest import REPO


def python_snippets() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), flags=re.S)


@pytest.mark.parametrize("which", [0, 1], ids=["sync", "await"])
def test_readme_facade_examples_run(tmp_path, which):
    snippet = python_snippets()[which]
    assert "A2ALocalFacade" in snippet
    done = subprocess.run([sys.executable, "-c", snippet], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"[0-9A-Z]{26}\n", done.stdout)
    assert (tmp_path / ".cleveragents" / "state.db").is_file()


def test_readme_agent_example_is_the_example_file():
    """The example file is served by the e2e tests (tests/e2e/test_published_agents.py)."""
    example = (REPO / "docs" / "examples" / "research_agent.py").read_text()
    snippet = python_snippets()[2].strip()
    assert snippet in example
    assert len(snippet.splitlines()) <= 20
