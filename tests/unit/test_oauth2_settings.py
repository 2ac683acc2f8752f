"""OAuth2's settings (Python and the configuration file), what scopes grant, and the
card's ``oauth2`` scheme in the 1.0 and 0.3 shapes (checked with the SDK's types)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cleveragents.a2a import methods
from cleveragents.a2a.access import GROUPS, ScopeGrants, group_of
from cleveragents.a2a.card_oauth2 import OAuth2Scheme
from cleveragents.a2a.cards import AgentCardSpec, card_both, card_v03, card_v1
from cleveragents.config import OAuth2, OAuth2ConfigError, Settings
from cleveragents.infra.config_file import USER_CONFIG_ENV, ConfigError, load_config, workspace_config_path

BASE = {"issuer": "https://issuer.test/", "audience": "https://agents.test", "jwks_url": "https://issuer.test/jwks",
        "token_url": "https://issuer.test/token"}


@pytest.mark.parametrize(("changes", "key"), [
    ({"issuer": ""}, "issuer"),
    ({"audience": []}, "audience"),
    ({"jwks_url": None}, "jwks_url"),
    ({"jwks_file": "/k.json"}, "jwks_url"),  # both
    ({"jwks_url": "http://issuer.test/jwks"}, "jwks_url"),  # plain http off loopback
    ({"jwks_url": "file:///etc/keys"}, "jwks_url"),
    ({"token_url": None}, "token_url"),
    ({"authorization_url": "https://i/a", "device_authorization_url": "https://i/d"}, "device_authorization_url"),
    ({"algorithms": ["HS256"]}, "algorithms"),
    ({"algorithms": ["none"]}, "algorithms"),
    ({"algorithms": []}, "algorithms"),
    ({"scopes": {"two words": ["read"]}}, "scopes"),
    ({"scopes": {"a": []}}, "scopes"),
    ({"leeway": 301}, "leeway"),
    ({"jwks_cache_seconds": 1}, "jwks_cache_seconds"),
])
def test_bad_settings_name_their_key(changes, key):
    with pytest.raises(OAuth2ConfigError) as caught:
        OAuth2(**{**BASE, **changes})
    assert caught.value.loc[0] == key
    assert str(caught.value).startswith(f"oauth2.{key}")


def test_settings_take_a_dict_and_loopback_http_keys():
    settings = Settings(oauth2={**BASE, "jwks_url": "http://127.0.0.1:9000/jwks", "audience": ["a", "b"]})
    assert isinstance(settings.oauth2, OAuth2) and settings.oauth2.audiences == ("a", "b")
    assert OAuth2(**{**BASE, "jwks_url": "http://[::1]:9/k"}).jwks_url == "http://[::1]:9/k"
    with pytest.raises(ValueError, match="oauth2 is an OAuth2"):
        Settings(oauth2="yes")  # type: ignore[arg-type]


def _write_config(workspace: Path, text: str):
    path = workspace_config_path(workspace)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return lambda: load_config(workspace, None, {USER_CONFIG_ENV: str(workspace / "none.toml")})


def test_the_config_files_oauth2_table(tmp_path):
    load = _write_config(tmp_path, '''
[oauth2]
issuer = "https://issuer.test/"
audience = ["https://agents.test", "agents"]
jwks_file = "keys/jwks.json"
token_url = "https://issuer.test/token"
leeway = 5

[oauth2.scopes]
"agents:read" = ["read"]
"agents:all" = "*"
''')
    table = load().oauth2
    assert table["jwks_file"] == str(tmp_path / "keys" / "jwks.json")  # relative to the workspace
    config = OAuth2(**table)
    assert config.scopes == {"agents:read": ("read",), "agents:all": ("*",)} and config.leeway == 5


@pytest.mark.parametrize(("text", "line", "key"), [
    ('[oauth2]\nissuer = "i"\naudience = "a"\njwks_url = "https://i/k"\n', 1, "oauth2.token_url"),
    ('[oauth2]\nissuer = "i"\naudience = "a"\njwks_url = "https://i/k"\ntoken_url = "https://i/t"\nleeway = -1\n',
     6, "oauth2.leeway"),
    ('[oauth2]\nissuer = "i"\naudience = "a"\njwks_url = "https://i/k"\ntoken_url = "https://i/t"\nfoo = 1\n',
     6, "oauth2.foo"),
    ('[oauth2]\nissuer = "i"\naudience = "a"\njwks_url = "https://i/k"\ntoken_url = "https://i/t"\n'
     '[oauth2.scopes]\n"a b" = ["read"]\n', 7, 'oauth2.scopes."a b"'),
    ('[oauth2]\nissuer = "i"\naudience = "a"\njwks_url = "http://i.example/k"\ntoken_url = "https://i/t"\n',
     4, "oauth2.jwks_url"),
])
def test_a_bad_oauth2_table_names_its_line_and_key(tmp_path, text, line, key):
    load = _write_config(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load()
    assert caught.value.data["key"] == key and caught.value.data["line"] == line, caught.value.message


def test_every_method_is_in_a_group():
    assert {spec.name for spec in methods.METHODS.values() if group_of(spec) is None} == set()
    assert {group_of(methods.METHODS[name]) for name in ("SendMessage", "GetTask", "_cleveragents/plan/apply")} == \
        set(GROUPS)


def test_scopes_grant_every_name_of_a_method():
    grants = ScopeGrants({"r": ["read"], "s": ["SendMessage"], "p": ["_cleveragents/plan/*"], "all": ["*"]})
    assert grants.granting("message/send") == ("s", "all")
    assert grants.granting("tasks/resubscribe") == ("r", "all")
    assert grants.granting("plan.apply") == ("p", "all")  # the legacy spelling of _cleveragents/plan/apply
    assert grants.granting("no/such/method") is None
    assert grants.allows("GetTask", frozenset({"r"})) and not grants.allows("GetTask", frozenset({"s"}))
    assert ScopeGrants({}).granting("SendMessage") is None  # no scopes: a valid token may call anything
    with pytest.raises(ValueError, match="'raed' is neither a group"):
        ScopeGrants({"r": ["raed"]})


FLOWS = {
    "clientCredentials": {},
    "authorizationCode": {"authorization_url": "https://issuer.test/authorize", "refresh_url": "https://i/r"},
    "deviceCode": {"device_authorization_url": "https://issuer.test/device"},
}


def _spec(flow: str) -> AgentCardSpec:
    config = OAuth2(**BASE, **FLOWS[flow], metadata_url="https://issuer.test/.well-known/oauth-authorization-server",
                    scopes={"agents:read": ["read"], "agents:send": ["read", "send"], "agents:admin": ["*"]})
    scheme = OAuth2Scheme.of(config, ScopeGrants(config.scopes))
    return AgentCardSpec(name="A", description="B", version="1", url="https://agent.test/a2a", bearer=True,
                         oauth2=scheme)


@pytest.mark.parametrize("flow", FLOWS)
def test_the_card_declares_the_oauth2_scheme(flow):
    spec = _spec(flow)
    v1 = card_v1(spec)
    scheme = v1["securitySchemes"]["oauth2"]["oauth2SecurityScheme"]
    assert list(scheme["flows"]) == [flow]
    assert scheme["flows"][flow]["tokenUrl"] == "https://issuer.test/token"
    assert set(scheme["flows"][flow]["scopes"]) == {"agents:read", "agents:send", "agents:admin"}
    assert scheme["oauth2MetadataUrl"].endswith("oauth-authorization-server")
    # Either secret works: the bearer token, or an OAuth2 token with a scope that can send.
    assert v1["securityRequirements"] == [{"schemes": {"bearerAuth": {"list": []}}},
                                          {"schemes": {"oauth2": {"list": ["agents:send"]}}},
                                          {"schemes": {"oauth2": {"list": ["agents:admin"]}}}]
    v03 = card_v03(spec)
    assert v03["securitySchemes"]["oauth2"]["type"] == "oauth2"
    assert v03["security"] == [{"bearerAuth": []}, {"oauth2": ["agents:send"]}, {"oauth2": ["agents:admin"]}]
    assert list(v03["securitySchemes"]["oauth2"]["flows"]) == ([] if flow == "deviceCode" else [flow])


@pytest.mark.parametrize("flow", FLOWS)
def test_oauth2_cards_parse_as_the_sdk_types(flow):
    json_format = pytest.importorskip("google.protobuf.json_format")
    pb2 = pytest.importorskip("a2a.types.a2a_pb2")
    v03_types = pytest.importorskip("a2a.compat.v0_3.types")
    resolver = pytest.importorskip("a2a.client.card_resolver")
    spec = _spec(flow)
    strict = json_format.ParseDict(card_v1(spec), pb2.AgentCard())
    assert strict.security_schemes["oauth2"].oauth2_security_scheme.flows.WhichOneof("flow") == {
        "clientCredentials": "client_credentials", "authorizationCode": "authorization_code",
        "deviceCode": "device_code"}[flow]
    assert json_format.MessageToDict(resolver.parse_agent_card(card_both(spec))) == json_format.MessageToDict(strict)
    model = v03_types.AgentCard.model_validate(card_v03(spec))
    assert model.model_dump(mode="json", by_alias=True, exclude_none=True) == card_v03(spec)
    assert v03_types.AgentCard.model_validate(card_both(spec)) == model


def test_only_keys_that_can_verify_are_kept():
    from cleveragents.transports.http.jwks import MAX_KEYS, KeySetUnavailable, signing_keys

    rsa = {"kty": "RSA", "n": "x", "e": "AQAB"}
    keys = signing_keys({"keys": [
        {**rsa, "kid": "plain"},                                   # RSA without alg: RS* and PS*
        {**rsa, "kid": "named", "alg": "PS384"},                   # its alg only
        {**rsa, "kid": "confused", "alg": "ES256"},                # an RSA key can't do ES256: dropped
        {**rsa, "kid": "hmac", "alg": "HS256"},                    # symmetric algorithms never: dropped
        {"kty": "oct", "k": "c2VjcmV0", "kid": "secret"},          # a shared secret: dropped
        {**rsa, "kid": "enc", "use": "enc"},                       # for encryption: dropped
        {**rsa, "kid": "ops", "key_ops": ["encrypt"]},             # can't verify: dropped
        {"kty": "EC", "crv": "P-384", "x": "x", "y": "y", "kid": "ec"},
        {"kty": "OKP", "crv": "Ed25519", "x": "x", "kid": "ed"},
        {**rsa, "kid": 7},                                         # a kid that is no string: dropped
        "not a key",
    ]}, "test")
    assert {key.kid: sorted(key.algorithms) for key in keys} == {
        "plain": ["PS256", "PS384", "PS512", "RS256", "RS384", "RS512"], "named": ["PS384"], "ec": ["ES384"],
        "ed": ["EdDSA"]}
    for document in ({"keys": {}}, [], {"keys": [rsa] * (MAX_KEYS + 1)}):
        with pytest.raises(KeySetUnavailable):
            signing_keys(document, "test")
