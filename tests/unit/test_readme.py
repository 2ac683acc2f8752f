"""The README's Python example runs as written."""

import re
import subprocess
import sys

from tests.conftest import REPO


def test_readme_python_example_runs(tmp_path):
    readme = (REPO / "README.md").read_text()
    (snippet,) = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    done = subprocess.run([sys.executable, "-c", snippet], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"[0-9A-Z]{26}\n", done.stdout)
    assert (tmp_path / ".cleveragents" / "state.db").is_file()
