"""Write failures for lack of space reach the client as errors naming the cause, in
both error tables, from real exceptions: SQLite refusing to grow a database past its
page limit, and the OS refusing a write."""

from __future__ import annotations

import errno
import json
import sqlite3
from pathlib import Path

import pytest

from cleveragents.a2a import dialects
from cleveragents.a2a.errors import internal_error_payload


def sqlite_full(path: Path) -> sqlite3.Error:
    db = sqlite3.connect(path)
    try:
        db.execute("CREATE TABLE t (x BLOB)")
        db.execute("PRAGMA max_page_count = 3")
        with pytest.raises(sqlite3.OperationalError) as raised:
            for _ in range(100):
                db.execute("INSERT INTO t VALUES (?)", (b"z" * 4096,))
                db.commit()
        return raised.value
    finally:
        db.close()


class StoreFailed(RuntimeError):
    """An error raised while handling another, as a store wrapper would."""


def wrapped(cause: BaseException) -> BaseException:
    try:
        raise StoreFailed("the write failed") from cause
    except StoreFailed as exc:
        return exc


def test_a_full_database_is_named_in_both_tables(tmp_path):
    exc = wrapped(sqlite_full(tmp_path / "state.db"))
    extension = internal_error_payload(exc, dialects.EXTENSION)
    assert extension["code"] == -32603 and "database or disk is full" in extension["message"]
    assert extension["data"]["reason"] == "storage_full" and extension["data"]["error_id"]
    (info,) = internal_error_payload(exc, dialects.A2A_V1)["data"]
    assert info["reason"] == "RESOURCE_EXHAUSTED" and info["metadata"]["sqlite_error"] == "SQLITE_FULL"


@pytest.mark.parametrize("code", [errno.ENOSPC, errno.EDQUOT, errno.EFBIG])
def test_an_os_write_error_names_its_errno_but_no_path(tmp_path, code):
    exc = OSError(code, "refused", str(tmp_path / "secret" / "file.txt"))
    payload = internal_error_payload(exc, dialects.EXTENSION)
    assert payload["data"]["errno"] == errno.errorcode[code]
    assert str(tmp_path) not in json.dumps(payload)


def test_other_errors_stay_opaque():
    payload = internal_error_payload(OSError(errno.EACCES, "denied", "/etc/x"), dialects.EXTENSION)
    assert payload == {"code": -32603, "message": "Internal error", "data": {"error_id": payload["data"]["error_id"]}}


def test_a_database_io_error_is_named():
    # What SQLite raises when the file size limit stops its write-ahead log
    # (SQLITE_IOERR_WRITE); the attribute is set here as the sqlite3 module sets it.
    exc = sqlite3.OperationalError("disk I/O error")
    exc.sqlite_errorcode = 778  # type: ignore[attr-defined]
    payload = internal_error_payload(exc, dialects.EXTENSION)
    assert "disk I/O error" in payload["message"] and payload["data"]["reason"] == "storage_io_error"
