"""``agents serve --grpc-port 0`` as a real process, for the gRPC suites.

The server's card is served over HTTP on another free port; both addresses are read
from its stderr (``gRPC listening on HOST:PORT``, then ``listening on URL``).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

from tests.conftest import REPO
from tests.listening import listening

AGENTS = Path(sys.executable).with_name("agents")
ECHO_ACTOR_CONFIG = '[defaults]\ndefault_actor = "python/tests.fakes.agents:echo_or_wait"\n'


@contextmanager
def grpc_server(workspace: Path, *args: str) -> Iterator[SimpleNamespace]:
    """Serve ``workspace`` in memory with ``args`` (credentials, limits); yields
    ``url`` (HTTP, for the card), ``target`` (gRPC) and ``pid``. It must exit 0 when stopped."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CLEVERAGENTS_")}
    env["PYTHONPATH"] = str(REPO)
    with listening([str(AGENTS), "serve", "--grpc-port", "0", "--port", "0", "--host", "127.0.0.1", "--memory",
                    "--workspace", str(workspace), *args], clean_exit=True, env=env, cwd=workspace) as served:
        target = next(m.group(1) for s in served.before if (m := re.match(r"gRPC listening on (\S+)", s)))
        yield SimpleNamespace(url=served.url, target=target, pid=served.process.pid)
