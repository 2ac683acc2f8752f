"""Keys for agent card signatures: read from PEM or JWK files (a JWK Set for trusted
keys too), each with its ``kid`` and the JWS algorithm its type allows.

A key's ``kid`` is the JWK's own ``kid``, else the one given after ``#`` in its
reference (``keys/card.pem#card-2026``), else its RFC 7638 thumbprint. The algorithm
follows the key: ES256/ES384/ES512 by curve, RS256 for RSA, EdDSA for Ed25519/Ed448,
so a signature can never choose a weaker one (no HMAC, no ``none``).

PyJWT (with ``cryptography``) and ``rfc8785`` are the ``signing`` extra; they are
imported only when keys are read.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cleveragents.domain.errors import ValidationError

MAX_KEY_FILE = 256 * 1024
EXTRA_HINT = ("card signing needs the signing extra: pip install -e '.[signing]' in the checkout, "
              "or pip install 'pyjwt[crypto]' rfc8785")


class CardKeyError(ValidationError):
    """A signing or trusted key that can't be used (missing, unreadable, wrong type)."""


@dataclass(frozen=True, slots=True)
class CardKey:
    kid: str
    algorithm: str  # the JWS "alg" this key signs or verifies with
    key: Any  # a cryptography key object: private to sign, public to verify


def require_libraries() -> None:
    try:
        import jwt  # noqa: F401
        import rfc8785  # noqa: F401
        from cryptography.hazmat.primitives import serialization  # noqa: F401
    except ImportError as exc:
        raise CardKeyError(EXTRA_HINT, {"missing": exc.name}) from None


def split_reference(reference: str) -> tuple[str, str | None]:
    """``path#kid`` -> (path, kid); the kid part is optional."""
    path, _, kid = reference.strip().partition("#")
    return path.strip(), (kid.strip() or None)


def references(value: str | Iterable[str | Path] | None) -> list[str]:
    """Key references from a comma-separated string or a list."""
    if value is None:
        return []
    items = value.split(",") if isinstance(value, str) else [str(v) for v in value]
    return [item.strip() for item in items if item.strip()]


def load_signing_keys(refs: Iterable[str], base: Path | None = None) -> tuple[CardKey, ...]:
    keys = tuple(_load(ref, base, private=True)[0] for ref in refs)
    kids = [k.kid for k in keys]
    if len(set(kids)) != len(kids):
        raise CardKeyError("two signing keys have the same kid", {"kids": kids})
    return keys


def load_trusted_keys(refs: Iterable[str], base: Path | None = None) -> tuple[CardKey, ...]:
    return tuple(key for ref in refs for key in _load(ref, base, private=False))


def keys_from_jwks(document: Any, source: str) -> tuple[CardKey, ...]:
    """The usable public keys of a JWK Set (``{"keys": [...]}``); others are skipped."""
    entries = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise CardKeyError(f"{source}: not a JWK Set (no \"keys\" list)", {"source": source})
    keys = []
    for entry in entries[:100]:
        try:
            keys.append(_from_jwk(entry, None, source, private=False))
        except CardKeyError:
            continue  # a key of a kind we can't use (an encryption key, say)
    return tuple(keys)


def _load(reference: str, base: Path | None, *, private: bool) -> tuple[CardKey, ...]:
    require_libraries()
    path_text, kid = split_reference(reference)
    path = Path(path_text).expanduser()
    if base is not None and not path.is_absolute():
        path = base / path
    try:
        with path.open("rb") as f:
            data = f.read(MAX_KEY_FILE + 1)
    except OSError as exc:
        raise CardKeyError(f"key file {path}: {exc.strerror}", {"file": str(path)}) from None
    if len(data) > MAX_KEY_FILE:
        raise CardKeyError(f"key file {path} is larger than {MAX_KEY_FILE} bytes", {"file": str(path)})
    source = str(path)
    if data.lstrip().startswith(b"{"):
        try:
            document = json.loads(data)
        except ValueError:
            raise CardKeyError(f"key file {path} is not valid JSON", {"file": source}) from None
        if isinstance(document, dict) and "keys" in document and not private:
            return keys_from_jwks(document, source)
        return (_from_jwk(document, kid, source, private=private),)
    return (_from_pem(data, kid, source, private=private),)


def _from_jwk(document: Any, kid: str | None, source: str, *, private: bool) -> CardKey:
    import jwt

    if not isinstance(document, dict):
        raise CardKeyError(f"{source}: a JWK is a JSON object", {"file": source})
    if private and "d" not in document:
        raise CardKeyError(f"{source}: a signing key must be a private key (the JWK has no \"d\")", {"file": source})
    try:
        key = jwt.PyJWK(document).key
    except (jwt.PyJWKError, jwt.InvalidKeyError, ValueError, TypeError) as exc:
        raise CardKeyError(f"{source}: not a usable JWK ({exc})", {"file": source}) from None
    if not private and hasattr(key, "public_key"):
        key = key.public_key()
    return _card_key(key, kid or _text(document.get("kid")), source)


def _from_pem(data: bytes, kid: str | None, source: str, *, private: bool) -> CardKey:
    from cryptography.hazmat.primitives import serialization
    from cryptography.x509 import load_pem_x509_certificate

    key: Any = None
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError):
        if private:
            raise CardKeyError(f"{source}: not an unencrypted PEM private key", {"file": source}) from None
    if key is None:
        try:
            key = serialization.load_pem_public_key(data)
        except ValueError:
            try:
                key = load_pem_x509_certificate(data).public_key()
            except ValueError:
                raise CardKeyError(f"{source}: not a PEM key or certificate", {"file": source}) from None
    elif not private:
        key = key.public_key()
    return _card_key(key, kid, source)


def _card_key(key: Any, kid: str | None, source: str) -> CardKey:
    algorithm = algorithm_of(key)
    if algorithm is None:
        raise CardKeyError(f"{source}: card signatures use EC (P-256/384/521), RSA (2048 bits or more), "
                           f"Ed25519 or Ed448 keys", {"file": source, "key_type": type(key).__name__})
    return CardKey(kid or thumbprint(key), algorithm, key)


def algorithm_of(key: Any) -> str | None:
    from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa

    if isinstance(key, (ec.EllipticCurvePrivateKey, ec.EllipticCurvePublicKey)):
        return {"secp256r1": "ES256", "secp384r1": "ES384", "secp521r1": "ES512"}.get(key.curve.name)
    if isinstance(key, (rsa.RSAPrivateKey, rsa.RSAPublicKey)):
        return "RS256" if key.key_size >= 2048 else None
    if isinstance(key, (ed25519.Ed25519PrivateKey, ed25519.Ed25519PublicKey, ed448.Ed448PrivateKey,
                        ed448.Ed448PublicKey)):
        return "EdDSA"
    return None


def public_jwk(key: CardKey) -> dict[str, Any]:
    """The public JWK of ``key`` with its kid, alg and use (for a JWK Set to publish)."""
    return {**_jwk_of(key.key), "kid": key.kid, "alg": key.algorithm, "use": "sig"}


def thumbprint(key: Any) -> str:
    """The RFC 7638 thumbprint (SHA-256, base64url) of the key's public JWK."""
    import rfc8785

    jwk = _jwk_of(key)
    members = {"EC": ("crv", "kty", "x", "y"), "RSA": ("e", "kty", "n"), "OKP": ("crv", "kty", "x")}[jwk["kty"]]
    digest = hashlib.sha256(rfc8785.dumps({m: jwk[m] for m in members})).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _jwk_of(key: Any) -> dict[str, Any]:
    """The public JWK (a dict) of a key."""
    import jwt.algorithms as algorithms

    public = key.public_key() if hasattr(key, "public_key") else key
    family: dict[str, Any] = {"ES": algorithms.ECAlgorithm, "RS": algorithms.RSAAlgorithm,
                              "Ed": algorithms.OKPAlgorithm}
    jwk: dict[str, Any] = family[(algorithm_of(public) or "")[:2]].to_jwk(public, as_dict=True)
    return jwk


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
