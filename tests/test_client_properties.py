"""kpulse's security settings as a Kafka Java client's properties: what ``kpulse --config F
kafka-cli TOOL`` hands the official tools. Each mapping is checked as text and, read back by the
Kafka client classes of the pinned release (tests/java/ReadClientConfig.java), as Java sees it."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.serialization import pkcs12

from kpulse.config import SecurityConfig
from localkafka.client_properties import (
    ClientKeyError, UnsupportedSecurityError, client_properties, jaas_quoted, jvm_system_properties,
    pkcs12_keystore, properties_text, write_client_config,
)
from localkafka.runtime import ensure_runtime, java_command
from tests.tls_support import ClientPki, client_pki

HOSTILE_PASSWORD = 'p"a\\ss\\"; w\u00f6rd =:#! \U0001f600\nnext line\ttab '
"""Quotes, backslashes, a JAAS terminator, non-Latin-1, a newline and a trailing space."""
SECRET = HOSTILE_PASSWORD.strip()
"""The same without the trailing space (Kafka trims a setting's value)."""
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
OAUTH = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"


# --- Java's view of a properties file ---------------------------------------------------------------

@pytest.fixture(scope="session")
def read_by_java(tmp_path_factory):
    """``read(properties_path) -> dict``: the file as the Kafka client classes understand it."""
    runtime = ensure_runtime()
    classes = tmp_path_factory.mktemp("read-client-config")
    source = Path(__file__).parent / "java" / "ReadClientConfig.java"
    subprocess.run(["javac", "-nowarn", "-cp", runtime.classpath, "-d", str(classes), str(source)], check=True)

    def read(path: Path) -> dict[str, str]:
        result = subprocess.run(java_command(runtime, "ReadClientConfig", [str(path)], extra_classpath=[classes]),
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr[-3000:]
        seen = dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)
        return {key: bytes.fromhex(value).decode() if key.startswith("option.") else value
                for key, value in seen.items()}

    return read


def written(security: SecurityConfig, directory: Path) -> Path:
    directory.mkdir(mode=0o700, exist_ok=True)
    return write_client_config(security, directory)


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> ClientPki:
    return client_pki(tmp_path_factory.mktemp("pki"))


# --- SASL -------------------------------------------------------------------------------------------

def test_plaintext_needs_nothing_but_the_protocol():
    assert client_properties(SecurityConfig()) == {"security.protocol": "PLAINTEXT"}
    assert jvm_system_properties(SecurityConfig()) == {}


@pytest.mark.parametrize("mechanism,module", [("SCRAM-SHA-256", SCRAM), ("SCRAM-SHA-512", SCRAM), ("PLAIN", PLAIN)])
def test_a_username_and_password_mechanism_is_its_login_module_with_both_quoted(mechanism, module):
    security = SecurityConfig(protocol="SASL_PLAINTEXT", sasl_mechanism=mechanism, sasl_username="ops",
                              sasl_password="hunter2")
    assert client_properties(security) == {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.jaas.config": f'{module} required username="ops" password="hunter2";',
    }


@pytest.mark.parametrize("value,quoted", [
    ("plain", '"plain"'),
    ('say "hi"', r'"say \"hi\""'),
    ("back\\slash", r'"back\\slash"'),
    ("two\nlines\r", r'"two\nlines\r"'),
    ("\\\"", r'"\\\""'),
])
def test_jaas_values_are_quoted_and_escaped(value, quoted):
    assert jaas_quoted(value) == quoted


def test_properties_text_escapes_what_java_properties_would_misread():
    text = properties_text({"a": "x\\y", "b": " lead", "c": "line\nbreak", "d": "caf\u00e9 \U0001f600", "e": "k=v:#!"})
    assert text.splitlines() == ["a=x\\\\y", "b=\\ lead", "c=line\\nbreak", "d=caf\\u00e9 \\ud83d\\ude00", "e=k=v:#!"]
    assert text.isascii()


def test_a_hostile_password_reaches_the_java_client_byte_for_byte(tmp_path, read_by_java):
    security = SecurityConfig(protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-512",
                              sasl_username='user "one"', sasl_password=HOSTILE_PASSWORD)
    seen = read_by_java(written(security, tmp_path / "client"))
    assert seen["security.protocol"] == "SASL_PLAINTEXT" and seen["sasl.mechanism"] == "SCRAM-SHA-512"
    assert seen["module"] == SCRAM and seen["flag"] == "LoginModuleControlFlag: required"
    assert seen["option.username"] == 'user "one"'
    assert seen["option.password"] == HOSTILE_PASSWORD


def test_oauthbearer_with_a_token_endpoint_is_the_client_credentials_flow(tmp_path, read_by_java):
    """Kafka 4's settings (sasl.oauthbearer.client.credentials.*, sasl.oauthbearer.scope), not the JAAS options."""
    url = "https://idp.example.com/oauth2/token"
    security = SecurityConfig(protocol="SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER",
                              sasl_oauthbearer_token_endpoint_url=url, sasl_oauthbearer_client_id="kpulse",
                              sasl_oauthbearer_client_secret=SECRET, sasl_oauthbearer_scope="kafka")
    properties = client_properties(security)
    assert properties["sasl.oauthbearer.token.endpoint.url"] == url
    assert properties["sasl.login.callback.handler.class"] == (
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler")
    assert properties["sasl.jaas.config"] == f"{OAUTH} required;"  # Kafka 4's settings, not the JAAS options
    assert jvm_system_properties(security) == {"org.apache.kafka.sasl.oauthbearer.allowed.urls": url}
    seen = read_by_java(written(security, tmp_path / "client"))
    assert seen["module"] == OAUTH and seen["sasl.mechanism"] == "OAUTHBEARER"
    assert (seen["option.sasl.oauthbearer.client.credentials.client.id"],
            seen["option.sasl.oauthbearer.client.credentials.client.secret"],
            seen["option.sasl.oauthbearer.scope"],
            seen["option.sasl.oauthbearer.token.endpoint.url"]) == ("kpulse", SECRET, "kafka", url)


def test_an_oauth_secret_with_blanks_around_it_goes_in_the_jaas_option_which_keeps_them(tmp_path, read_by_java):
    security = SecurityConfig(protocol="SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER",
                              sasl_oauthbearer_token_endpoint_url="https://idp/token", sasl_oauthbearer_client_id="c",
                              sasl_oauthbearer_client_secret=HOSTILE_PASSWORD)
    assert "sasl.oauthbearer.client.credentials.client.secret" not in client_properties(security)
    seen = read_by_java(written(security, tmp_path / "client"))
    assert seen["option.clientSecret"] == HOSTILE_PASSWORD


def test_oauthbearer_without_a_scope_leaves_the_scope_out():
    security = SecurityConfig(protocol="SASL_SSL", sasl_mechanism="OAUTHBEARER",
                              sasl_oauthbearer_token_endpoint_url="https://idp/token",
                              sasl_oauthbearer_client_id="c", sasl_oauthbearer_client_secret="s")
    assert "sasl.oauthbearer.scope" not in client_properties(security)


def test_oauthbearer_without_a_token_endpoint_is_one_line_naming_the_missing_setting():
    security = SecurityConfig(protocol="SASL_PLAINTEXT", sasl_mechanism="OAUTHBEARER")
    with pytest.raises(UnsupportedSecurityError) as raised:
        client_properties(security)
    assert "sasl_oauthbearer_token_endpoint_url" in str(raised.value) and "\n" not in str(raised.value)


# --- TLS --------------------------------------------------------------------------------------------

def test_tls_trusts_the_configured_ca_as_a_pem_truststore(tmp_path, pki, read_by_java):
    security = SecurityConfig(protocol="SSL", ssl_ca_location=str(pki.ca_path))
    assert client_properties(security) == {"security.protocol": "SSL", "ssl.truststore.type": "PEM",
                                           "ssl.truststore.location": str(pki.ca_path)}
    seen = read_by_java(written(security, tmp_path / "client"))
    assert seen["truststore.entries"] == "1" and seen["endpoint.identification"] == "https"


@pytest.mark.parametrize("ca", [None, "probe"])
def test_without_a_ca_file_the_jvm_default_truststore_is_used(ca):
    assert client_properties(SecurityConfig(protocol="SSL", ssl_ca_location=ca)) == {"security.protocol": "SSL"}


def test_endpoint_identification_off_is_the_empty_algorithm(tmp_path, pki, read_by_java):
    security = SecurityConfig(protocol="SSL", ssl_ca_location=str(pki.ca_path), ssl_endpoint_identification=False)
    assert client_properties(security)["ssl.endpoint.identification.algorithm"] == ""
    assert read_by_java(written(security, tmp_path / "client"))["endpoint.identification"] == ""


def keystore_of(pki: ClientPki, key: bytes, key_password: str | None, key_path: str = "/k.pem") -> bytes:
    return pkcs12_keystore(pki.certificate_path.read_bytes(), key, key_password=key_password,
                           keystore_password="store-pw", key_path=key_path, certificate_path=str(pki.certificate_path))


@pytest.mark.parametrize("form,password", [("pkcs8", 'k3y pass"word'), ("traditional", "k3y\\pass"),
                                           ("pkcs8", None), ("traditional", None)])
def test_the_client_key_and_certificate_become_a_pkcs12_keystore_with_its_own_password(pki, form, password):
    store = keystore_of(pki, pki.key_file(form, password).read_bytes(), password)
    loaded_key, loaded_certificate, _ = pkcs12.load_key_and_certificates(store, b"store-pw")
    assert loaded_certificate == pki.client_certificate
    assert loaded_key.private_numbers() == pki.client_key.private_numbers()


def test_a_password_set_for_a_clear_key_is_ignored_as_librdkafka_does(pki):
    store = keystore_of(pki, pki.key_file("pkcs8", None).read_bytes(), "unused")
    assert pkcs12.load_key_and_certificates(store, b"store-pw")[1] == pki.client_certificate


@pytest.mark.parametrize("form", ["pkcs8", "traditional"])
def test_a_wrong_key_password_is_one_line_naming_the_key_file(pki, form):
    key = pki.key_file(form, "right")
    with pytest.raises(ClientKeyError) as raised:
        keystore_of(pki, key.read_bytes(), "wrong", str(key))
    assert str(raised.value) == f"cannot read the client key {key}: wrong ssl_key_password?"


def test_an_encrypted_key_without_a_password_and_a_file_that_is_no_key_are_one_line_each(pki):
    key = pki.key_file("pkcs8", "secret")
    with pytest.raises(ClientKeyError) as raised:
        keystore_of(pki, key.read_bytes(), None, str(key))
    assert str(raised.value) == f"cannot read the client key {key}: it is encrypted and ssl_key_password is not set"
    with pytest.raises(ClientKeyError) as raised:
        keystore_of(pki, b"hello", None)
    assert str(raised.value) == "cannot read the client key /k.pem: not a PEM private key"


def test_mutual_tls_over_sasl_ssl_is_read_by_java_from_private_files(tmp_path, pki, read_by_java):
    key = pki.key_file("traditional", "key-pw")
    security = SecurityConfig(protocol="SASL_SSL", sasl_mechanism="PLAIN", sasl_username="u", sasl_password="p",
                              ssl_ca_location=str(pki.ca_path), ssl_certificate_location=str(pki.certificate_path),
                              ssl_key_location=str(key), ssl_key_password="key-pw")
    directory = tmp_path / "client"
    path = written(security, directory)
    text = path.read_text()
    assert "ssl.keystore.type=PKCS12" in text and "key-pw" not in text
    assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in directory.iterdir()} == {
        "client.properties": 0o600, "client.p12": 0o600}
    seen = read_by_java(path)
    assert seen["keystore.certificate"] == "CN=kpulse-client" and seen["keystore.chain"] == "1"
    assert seen["truststore.entries"] == "1" and seen["module"] == PLAIN


def test_the_files_are_created_private_whatever_the_umask(tmp_path):
    previous = os.umask(0)
    try:
        path = written(SecurityConfig(protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN", sasl_username="u",
                                      sasl_password="p"), tmp_path / "client")
    finally:
        os.umask(previous)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
