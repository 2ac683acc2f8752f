"""A content-addressed store of file contents: ``root/ab/cdef...`` by sha256.

Blobs are immutable, so a blob that exists is never written again, and each is
written whole (temp file + rename): a reader never sees half of one.
"""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

from cleveragents.domain.errors import ResourceNotFoundError, ValidationError
from cleveragents.domain.plan_files import DIGEST
from cleveragents.infra.workspace._fs import (
    fsync_dir,
    read_file,
    remove_temp_files,
    write_atomic,
)


class BlobStore:
    """Safe to share between threads: files are only ever created whole, and the
    memo of what exists only grows (blobs are never deleted behind its back while it
    runs; a collector would run between processes)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._root = os.fspath(root)
        self._known: set[str] = set()
        self._dirs: set[str] = set()
        self._lock = threading.Lock()

    @staticmethod
    def digest_of(data: bytes) -> str:
        return hashlib.sha256(data).hexdigest()

    def path(self, digest: str) -> Path:
        return Path(self._file(digest))

    def _file(self, digest: str) -> str:
        if not isinstance(digest, str) or not DIGEST.match(digest):
            raise ValidationError("not a sha256 digest", {"field": "blob", "value": str(digest)[:80]})
        return os.path.join(self._root, digest[:2], digest[2:])

    def has(self, digest: str) -> bool:
        if digest in self._known:
            return True
        if os.path.isfile(self._file(digest)):
            with self._lock:
                self._known.add(digest)
            return True
        return False

    def put(self, data: bytes, *, digest: str | None = None, durable: bool = False) -> str:
        """Store ``data`` and return its digest. ``digest`` saves hashing again when
        the caller just computed it; ``durable`` fsyncs the blob and its directory.
        A blob this store has not seen is written without asking the disk first:
        most are new, and renaming over an equal blob is harmless."""
        digest = digest or self.digest_of(data)
        if digest in self._known:
            return digest
        target = self._file(digest)
        if digest[:2] not in self._dirs:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with self._lock:
                self._dirs.add(digest[:2])
        write_atomic(target, data, None, durable=durable)
        if durable:
            fsync_dir(os.path.dirname(target))
        with self._lock:
            self._known.add(digest)
        return digest

    def get(self, digest: str) -> bytes:
        try:
            return read_file(self._file(digest))
        except FileNotFoundError:
            raise ResourceNotFoundError("blob not found", {"blob": digest}) from None

    def size(self, digest: str) -> int:
        try:
            return os.stat(self._file(digest)).st_size
        except FileNotFoundError:
            raise ResourceNotFoundError("blob not found", {"blob": digest}) from None

    def remove_temp_files(self) -> int:
        """Delete half-written blobs an interrupted ``put`` left behind."""
        if not self.root.is_dir():
            return 0
        return sum(remove_temp_files(sub) for sub in self.root.iterdir() if sub.is_dir())
