"""The signed view of a card matches the official SDK's, and bad signing settings fail
early with a clear error."""

from __future__ import annotations

import copy

import pytest
import rfc8785
from a2a.client.card_resolver import parse_agent_card
from a2a.types import a2a_pb2 as pb
from a2a.utils.signing import _canonicalize_agent_card

from cleveragents.a2a.card_keys import CardKeyError
from cleveragents.a2a.card_schema import SCHEMA, signing_view
from cleveragents.a2a.card_signing import CardVerifier, TrustedKeys, signer_from_settings
from cleveragents.a2a.cards import AgentCardSpec, ExtensionSpec, SkillSpec, card_both, card_v1
from cleveragents.config import Settings


def _fields(descriptor) -> dict[str, object]:
    return {f.json_name: f for f in descriptor.fields}


def test_the_schema_names_every_field_of_the_sdks_agent_card():
    seen: set[str] = set()

    def walk(descriptor) -> None:
        name = descriptor.name
        if name in seen or descriptor.full_name.startswith("google.protobuf"):
            return
        seen.add(name)
        assert set(SCHEMA[name]) == set(_fields(descriptor)), name
        for field in descriptor.fields:
            message = field.message_type
            if message is not None and message.GetOptions().map_entry:
                message = message.fields_by_name["value"].message_type
            if message is not None:
                walk(message)
            elif field.type == field.TYPE_BOOL:
                expected = "optional_bool" if field.has_presence else "bool"
                assert SCHEMA[name][field.json_name] == expected, (name, field.json_name)

    walk(pb.AgentCard.DESCRIPTOR)
    assert seen == set(SCHEMA)


SPECS = [
    AgentCardSpec("a", "b", "1", "http://h/a2a"),
    AgentCardSpec("Ünïcode ✓", "", "2.0", "https://h/x/a2a", streaming=False, bearer=True, api_key_header="X-K",
                  skills=(SkillSpec("s", "S", "d", ("t",), ("e",)), SkillSpec("e", "E", "", ())),
                  extensions=(ExtensionSpec("urn:x", None, False, {"n": 1, "f": 1.5, "empty": "", "l": [[], "x"]}),
                              ExtensionSpec("urn:y", "y", True, None)), extended_card=True),
]


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("render", [card_v1, card_both])
def test_the_signed_view_is_what_the_sdk_canonicalizes(spec, render):
    card = render(spec)
    ours = rfc8785.dumps(signing_view(card)).decode()
    assert ours == _canonicalize_agent_card(parse_agent_card(copy.deepcopy(card)))


def test_signing_settings_fail_early_and_clearly(tmp_path):
    with pytest.raises(CardKeyError, match="missing.pem"):
        signer_from_settings(Settings(workspace=tmp_path, card_signing_keys="missing.pem"))
    (tmp_path / "bad.pem").write_text("not a key")
    with pytest.raises(CardKeyError, match="not an unencrypted PEM private key"):
        signer_from_settings(Settings(workspace=tmp_path, card_signing_keys="bad.pem"))
    (tmp_path / "public.jwk").write_text('{"kty": "OKP", "crv": "Ed25519", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}')
    with pytest.raises(CardKeyError, match="private key"):
        signer_from_settings(Settings(workspace=tmp_path, card_signing_keys="public.jwk"))
    with pytest.raises(ValueError, match="off, warn or require"):
        Settings(card_signature_policy="maybe")  # type: ignore[arg-type]
    with pytest.raises(CardKeyError, match="needs trusted keys"):
        CardVerifier("require")
    with pytest.raises(CardKeyError, match="https"):
        TrustedKeys(jwks_url="http://keys.example/jwks.json")
    assert signer_from_settings(Settings(workspace=tmp_path)) is None


def test_settings_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("CLEVERAGENTS_CARD_SIGNATURE_POLICY", "warn")
    monkeypatch.setenv("CLEVERAGENTS_CARD_SIGNING_KEYS", "a.pem#k1, b.jwk")
    settings = Settings.from_env()
    assert settings.card_signature_policy == "warn" and settings.card_signing_keys == "a.pem#k1, b.jwk"


async def test_a_config_files_defaults_sign_the_backends_card(tmp_path, monkeypatch):
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    from cleveragents.container import Container
    from cleveragents.infra.config_file import USER_CONFIG_ENV, workspace_config_path

    monkeypatch.setenv(USER_CONFIG_ENV, str(tmp_path / "no-user-config.toml"))
    key = ed25519.Ed25519PrivateKey.generate()
    (tmp_path / "card.pem").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                          serialization.NoEncryption()))
    (tmp_path / "card.pub.pem").write_bytes(key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    path = workspace_config_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text('[defaults]\ncard_signing_keys = "card.pem#cfg-1"\ncard_signature_policy = "require"\n'
                    'card_trusted_keys = "card.pub.pem#cfg-1"\n')
    container = Container(Settings(workspace=tmp_path, memory=True))
    try:
        card = container.agent_card_service.card("both")
        assert container.card_verifier is not None and container.card_verifier.policy == "require"
        verdict = await container.card_verifier.verify(card)
        assert verdict.ok and verdict.kid == "cfg-1"
    finally:
        await container.aclose()
