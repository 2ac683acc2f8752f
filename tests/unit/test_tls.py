"""The TLS context outbound clients share (``cleveragents/tls.py``)."""

import ssl

from cleveragents import tls


def test_one_context_serves_every_client_until_the_trusted_certificates_change(tmp_path, monkeypatch):
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    shared = tls.client_context()
    assert isinstance(shared, ssl.SSLContext) and shared.verify_mode == ssl.CERT_REQUIRED and shared.check_hostname
    assert tls.client_context() is shared
    monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path))
    assert tls.client_context() is not shared
    monkeypatch.delenv("SSL_CERT_DIR")
    assert tls.client_context() is shared
