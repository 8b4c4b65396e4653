"""OAUTHBEARER in the config: OIDC client credentials only (a token endpoint, a client id and a
secret), refused in one line otherwise, and what librdkafka is told to verify an https token
endpoint with. No Kafka needed."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from kpulse.config import ConfigError, parse_config

OAUTH = {"protocol": "SASL_SSL", "sasl_mechanism": "OAUTHBEARER",
         "sasl_oauthbearer_token_endpoint_url": "https://idp.example.com/oauth2/token",
         "sasl_oauthbearer_client_id": "kpulse", "sasl_oauthbearer_client_secret": "${SECRET}"}


def cluster(tmp_path: Path, **security):
    data = {"clusters": [{"name": "prod", "bootstrap_servers": "k:9093", "security": security}],
            "lake": {"path": str(tmp_path / "lake")}}
    return parse_config(data, source="test", base_dir=tmp_path, environ={"SECRET": "s3cret"}).clusters[0]


def error(tmp_path: Path, **security) -> str:
    with pytest.raises(ConfigError) as raised:
        cluster(tmp_path, **security)
    assert "\n" not in str(raised.value)
    return str(raised.value)


def test_oauthbearer_without_a_token_endpoint_is_refused_in_one_line(tmp_path):
    security = {key: value for key, value in OAUTH.items() if key != "sasl_oauthbearer_token_endpoint_url"}
    assert error(tmp_path, **security) == (
        "clusters[0].security.sasl_mechanism: OAUTHBEARER needs sasl_oauthbearer_token_endpoint_url: "
        "kpulse supports OIDC client credentials only")
    assert error(tmp_path, protocol="SASL_SSL", sasl_mechanism="OAUTHBEARER").startswith(
        "clusters[0].security.sasl_mechanism: OAUTHBEARER needs sasl_oauthbearer_token_endpoint_url")


def test_the_token_endpoint_is_an_http_url_and_the_client_is_named(tmp_path):
    assert error(tmp_path, **{**OAUTH, "sasl_oauthbearer_token_endpoint_url": "idp:443/token"}) == (
        "clusters[0].security.sasl_oauthbearer_token_endpoint_url: 'idp:443/token' is not an http(s) URL")
    for key in ("sasl_oauthbearer_client_id", "sasl_oauthbearer_client_secret"):
        security = {k: v for k, v in OAUTH.items() if k != key}
        assert error(tmp_path, **security) == f"clusters[0].security.{key}: required when sasl_mechanism is OAUTHBEARER"


def test_an_oauthbearer_key_is_refused_with_another_mechanism(tmp_path):
    assert error(tmp_path, protocol="SASL_SSL", sasl_mechanism="PLAIN", sasl_username="u", sasl_password="p",
                 sasl_oauthbearer_ca_location="ca.pem") == (
        "clusters[0].security.sasl_oauthbearer_ca_location: only used when sasl_mechanism is OAUTHBEARER")


def test_librdkafka_gets_the_oidc_method_and_the_secret_from_the_environment(tmp_path):
    settings = cluster(tmp_path, **OAUTH).client_config()
    assert settings["sasl.oauthbearer.method"] == "oidc"
    assert settings["sasl.oauthbearer.client.secret"] == "s3cret"
    assert "sasl.username" not in settings


def test_an_https_endpoint_is_verified_with_the_configured_ca_relative_to_the_config(tmp_path):
    (tmp_path / "idp-ca.pem").write_text("a CA")
    config = cluster(tmp_path, **OAUTH, sasl_oauthbearer_ca_location="idp-ca.pem")
    assert config.security.sasl_oauthbearer_ca_location == str(tmp_path / "idp-ca.pem")
    assert config.client_config()["https.ca.location"] == str(tmp_path / "idp-ca.pem")
    assert error(tmp_path, **OAUTH, sasl_oauthbearer_ca_location="missing.pem") == (
        f"clusters[0].security.sasl_oauthbearer_ca_location: no such file {tmp_path / 'missing.pem'}")


def test_without_a_ca_an_https_endpoint_is_verified_with_this_machines_trust_store(tmp_path):
    """librdkafka's wheels look for /etc/pki/tls/certs/ca-bundle.crt (Red Hat's place) and fail an
    https token endpoint elsewhere ("error adding trust anchors"): kpulse names OpenSSL's default."""
    paths = ssl.get_default_verify_paths()
    assert cluster(tmp_path, **OAUTH).client_config()["https.ca.location"] == (paths.cafile or paths.capath)


def test_an_http_endpoint_needs_no_ca(tmp_path):
    config = cluster(tmp_path, **{**OAUTH, "sasl_oauthbearer_token_endpoint_url": "http://127.0.0.1:8080/token"})
    assert "https.ca.location" not in config.client_config()
    assert config.security.token_endpoint_ca_location() is None


def test_the_client_secret_is_redacted(tmp_path):
    assert cluster(tmp_path, **OAUTH).redacted()["security"]["sasl_oauthbearer_client_secret"] == "***"
