"""What the log redaction removes, and what it leaves alone."""

import logging

import pytest

from cleveragents.transports import redaction
from cleveragents.transports.redaction import REDACTED, RedactingFormatter, redact


@pytest.mark.parametrize("line, secret", [
    ('127.0.0.1:5 - "GET /tasks?access_token=s3cr3t-value&x=1 HTTP/1.1" 401', "s3cr3t-value"),
    ("GET /hook?sig=abcdef123&X-Amz-Signature=ffee00", "abcdef123"),
    ("GET /hook?sig=abcdef123&X-Amz-Signature=ffee00", "ffee00"),
    ("url http://h/x?apiKey=K-123;token=T-456", "K-123"),
    ("url http://h/x?apiKey=K-123;token=T-456", "T-456"),
    ("headers: {'authorization': 'Bearer tok-abc.def'}", "tok-abc.def"),
    ("[(b'authorization', b'Bearer tok-xyz'), (b'host', b'h')]", "tok-xyz"),
    ("Authorization: Basic dXNlcjpwYXNz", "dXNlcjpwYXNz"),
    ("X-API-Key: key-123456", "key-123456"),
    ("cookie=session-abc123", "session-abc123"),
    ("sent with bearer abc.def-ghi", "abc.def-ghi"),
])
def test_credentials_are_redacted(line, secret):
    assert secret not in redact(line) and REDACTED in redact(line)


def test_ordinary_lines_are_left_alone():
    for line in ("listening on http://127.0.0.1:8000", "GET /tasks?pageSize=5&contextId=abc HTTP/1.1",
                 "task 01HX finished: completed", "push to a webhook of task t1 failed (HTTP 500), attempt 1"):
        assert redact(line) == line


def test_registered_secrets_and_secret_variables_are_redacted_anywhere():
    redaction.register(["registered-secret-9f8e", "short"])
    redaction.register_environment({"MY_SERVICE_TOKEN": "env-token-1234abcd", "OTHER_KEYS": "k-one-5678,k-two-9012",
                                    "HOME": "/home/someone-long-path"})
    text = redact("registered-secret-9f8e env-token-1234abcd k-one-5678 k-two-9012 short /home/someone-long-path")
    assert text == f"{REDACTED} {REDACTED} {REDACTED} {REDACTED} short /home/someone-long-path"


def test_the_formatter_redacts_messages_arguments_and_tracebacks():
    formatter = RedactingFormatter("%(message)s")
    try:
        raise ValueError("failed for /x?token=tb-secret-1")
    except ValueError as exc:
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "call %s", ("?api_key=arg-secret-2",),
                                   (type(exc), exc, exc.__traceback__))
    text = formatter.format(record)
    assert "tb-secret-1" not in text and "arg-secret-2" not in text and "Traceback" in text
