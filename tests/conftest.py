import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SERVER_COMMAND = [sys.executable, "-m", "cleveragents.transports.lsp"]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A real workspace directory on disk, with a file in it."""
    root = tmp_path / "workspace"
    root.mkdir()
    (root / "README.md").write_text("hello\n")
    return root


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    from tests.background_installs import order_and_start

    order_and_start(items)
