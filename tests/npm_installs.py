"""``npm ci`` into a directory of the checkout (the editor extension, the npm clients),
done once per package-lock.json: a stamp in ``node_modules`` names the lock it
installed. A lock file under the checkout's ``.cache/`` (not in the directory: ``npm ci``
empties node_modules, and a packaged extension takes what its directory holds) keeps two
test processes (``pytest -n``) from installing there at once; the second finds the stamp.
"""

from __future__ import annotations

import fcntl
import hashlib
from pathlib import Path

STAMP = Path("node_modules") / ".cleveragents-package-lock.sha256"
LOCKS = Path(__file__).resolve().parents[1] / ".cache" / "npm-installs"


def npm_ci(directory: Path, timeout: float) -> None:
    """``directory``'s node_modules as its package-lock.json says; fails the test with
    npm's output when the install fails."""
    from tests.e2e.code_server import run_checked

    digest = hashlib.sha256((directory / "package-lock.json").read_bytes()).hexdigest()
    stamp = directory / STAMP
    LOCKS.mkdir(parents=True, exist_ok=True)
    name = hashlib.sha256(str(directory.resolve()).encode()).hexdigest()[:16]
    with open(LOCKS / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not stamp.is_file() or stamp.read_text().strip() != digest:
            run_checked(["npm", "ci", "--no-audit", "--no-fund"], directory, timeout)
            stamp.parent.mkdir(exist_ok=True)
            stamp.write_text(digest)
