import gc
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


@pytest.fixture(autouse=True)
def _test_process_heap_out_of_the_collectors_way(request: pytest.FixtureRequest):
    """For a test that measures time (``serial``): the test process's own heap is moved out
    of the collector's reach while it runs. Serial tests run last, when a worker holds a
    whole suite's objects, and a full collection then took 170 ms and more: long enough to
    be timed as the server's stall in a client's round trip."""
    from tests import parallel

    if not parallel.is_serial(request.node):
        yield
        return
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def pytest_configure(config: pytest.Config) -> None:
    from tests import parallel

    if not parallel.is_worker(config) and config.getoption("dist", "no") != "no":
        config.pluginmanager.register(parallel.Controller(), "cleveragents-parallel")


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    from tests import background_installs, parallel

    background_installs.order(items)
    parallel.order_serial_last(items)
    parallel.share_groups(config, items)
    if not (parallel.is_worker(config) or config.option.collectonly):
        background_installs.start([item.nodeid for item in items])


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: object, ids: list[str]) -> None:
    """In a parallel run's controller: each worker collected the same tests."""
    from tests import background_installs

    background_installs.start(ids)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    from tests import parallel

    return parallel.worker_count()


@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL server for the session (tests/postgres_server.py); skips
    where none can be started, fails under CI=true."""
    from tests.postgres_server import require_postgres, stop_postgres

    server = require_postgres()
    yield server
    stop_postgres()


@pytest.fixture
def postgres_url(postgres) -> str:
    """A fresh database on the session's server."""
    return postgres.new_database()


@pytest.fixture
async def issuer():
    """An OAuth2 authorization server on loopback (tests/oauth2_issuer.py): its JWKS
    endpoint, and access tokens minted with its keys."""
    from tests.oauth2_issuer import running_issuer

    async with running_issuer() as running:
        yield running
