"""A configured cluster's security settings as a Kafka Java client's properties: what
``kpulse --config F kafka-cli TOOL`` hands the official tools, so that they connect as kpulse does.

:func:`client_properties` maps a :class:`SecurityConfig` to ``key=value`` properties,
:func:`jvm_system_properties` to what the JVM must be told, :func:`pkcs12_keystore` turns the PEM
client certificate and key (encrypted or not) into a PKCS12 keystore, :func:`properties_text`
writes properties as ``java.util.Properties`` reads them; :func:`write_client_config` is the only
function here that writes files.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from kpulse.config.model import SecurityConfig
from kpulse.errors import KpulseError

SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
OAUTHBEARER_LOGIN_MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule"
OAUTHBEARER_CALLBACK_HANDLER = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler"
ALLOWED_URLS = "org.apache.kafka.sasl.oauthbearer.allowed.urls"
"""JVM system property: Kafka 4 clients fetch tokens only from the URLs it lists."""
PROPERTIES_FILE = "client.properties"
KEYSTORE_FILE = "client.p12"
KEYSTORE_ALIAS = b"kpulse-client"
FILE_MODE = 0o600


class UnsupportedSecurityError(KpulseError):
    """Security settings kpulse cannot express as Java client properties."""


class ClientKeyError(KpulseError):
    """The client certificate or key of mutual TLS cannot be read."""


@dataclass(frozen=True)
class Keystore:
    """A PKCS12 keystore holding the client key and certificate."""

    location: str
    """Path of the keystore file."""
    password: str = field(repr=False)
    """Password of the keystore and of the key in it."""


def client_properties(security: SecurityConfig, keystore: Keystore | None = None) -> dict[str, str]:
    """The Java client properties of ``security``; ``keystore`` holds the client certificate and key
    when ``security`` has them (mutual TLS)."""
    properties = {"security.protocol": security.protocol}
    if security.uses_sasl:
        properties.update(_sasl_properties(security))
    if security.uses_ssl:
        properties.update(_tls_properties(security, keystore))
    return properties


def jvm_system_properties(security: SecurityConfig) -> dict[str, str]:
    """What the client's JVM must be started with (``-Dkey=value``) besides the properties file."""
    url = security.sasl_oauthbearer_token_endpoint_url
    if security.uses_sasl and security.sasl_mechanism == "OAUTHBEARER" and url:
        return {ALLOWED_URLS: url}
    return {}


def _sasl_properties(security: SecurityConfig) -> dict[str, str]:
    mechanism = security.sasl_mechanism or ""
    if mechanism != "OAUTHBEARER":
        module = SCRAM_LOGIN_MODULE if mechanism.startswith("SCRAM-") else PLAIN_LOGIN_MODULE
        return {"sasl.mechanism": mechanism, "sasl.jaas.config": jaas_config(
            module, {"username": security.sasl_username, "password": security.sasl_password})}
    url = security.sasl_oauthbearer_token_endpoint_url
    if not url:
        raise UnsupportedSecurityError(
            "OAUTHBEARER needs sasl_oauthbearer_token_endpoint_url: kpulse supports OIDC client credentials only")
    # Kafka 4's own settings of the client credentials grant (the JAAS options clientId, clientSecret
    # and scope are deprecated). Kafka trims a setting's value: a secret with blanks around it goes
    # in the JAAS option, which keeps them.
    # The token endpoint's TLS is the login module's: the JVM's truststore unless a CA is configured.
    secret = security.sasl_oauthbearer_client_secret
    kept_whole = secret is not None and secret != secret.strip()
    ca = security.sasl_oauthbearer_ca_location
    options = {"clientSecret": secret if kept_whole else None,
               "ssl.truststore.type": "PEM" if ca else None, "ssl.truststore.location": ca}
    properties = {"sasl.mechanism": mechanism,
                  "sasl.jaas.config": jaas_config(OAUTHBEARER_LOGIN_MODULE, options),
                  "sasl.login.callback.handler.class": OAUTHBEARER_CALLBACK_HANDLER,
                  "sasl.oauthbearer.token.endpoint.url": url,
                  "sasl.oauthbearer.client.credentials.client.id": security.sasl_oauthbearer_client_id,
                  "sasl.oauthbearer.client.credentials.client.secret": None if kept_whole else secret,
                  "sasl.oauthbearer.scope": security.sasl_oauthbearer_scope}
    return {key: value for key, value in properties.items() if value is not None}


def _tls_properties(security: SecurityConfig, keystore: Keystore | None) -> dict[str, str]:
    properties = {}
    if security.ssl_ca_location and security.ssl_ca_location != "probe":  # probe: the system's CAs
        properties.update({"ssl.truststore.type": "PEM", "ssl.truststore.location": security.ssl_ca_location})
    if not security.ssl_endpoint_identification:
        properties["ssl.endpoint.identification.algorithm"] = ""
    if security.ssl_certificate_location:
        if keystore is None:
            raise ValueError("mutual TLS needs the keystore made by pkcs12_keystore")
        properties.update({"ssl.keystore.type": "PKCS12", "ssl.keystore.location": keystore.location,
                           "ssl.keystore.password": keystore.password, "ssl.key.password": keystore.password})
    return properties


def jaas_config(module: str, options: Mapping[str, str | None]) -> str:
    """A ``sasl.jaas.config`` value: the login module, required, with the options that are set."""
    return f"{module} required" + "".join(
        f" {name}={jaas_quoted(value)}" for name, value in options.items() if value is not None) + ";"


_JAAS_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r"}


def jaas_quoted(value: str) -> str:
    """``value`` as a quoted JAAS option value (Kafka parses it with ``java.io.StreamTokenizer``)."""
    return '"' + "".join(_JAAS_ESCAPES.get(char, char) for char in value) + '"'


_PROPERTIES_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\f": "\\f"}


def properties_text(properties: Mapping[str, str]) -> str:
    """``key=value`` lines as ``java.util.Properties.load(InputStream)`` reads them: ASCII only,
    with Java's escapes (keys are Kafka's config names and need none)."""
    return "".join(f"{key}={_properties_value(value)}\n" for key, value in properties.items())


def _properties_value(value: str) -> str:
    escaped = []
    for index, char in enumerate(value):
        if char in _PROPERTIES_ESCAPES:
            escaped.append(_PROPERTIES_ESCAPES[char])
        elif char == " " and index == 0:  # leading blanks would be dropped
            escaped.append("\\ ")
        elif " " <= char <= "~":
            escaped.append(char)
        else:  # as UTF-16 code units
            units = char.encode("utf-16-be")
            escaped.extend(f"\\u{units[i:i + 2].hex()}" for i in range(0, len(units), 2))
    return "".join(escaped)


def pkcs12_keystore(certificate_pem: bytes, key_pem: bytes, *, key_password: str | None, keystore_password: str,
                    key_path: str, certificate_path: str) -> bytes:
    """The PEM client certificate (and the chain after it) and key as a PKCS12 keystore encrypted
    with ``keystore_password``. The key may be PKCS#8 or traditional, encrypted with
    ``key_password`` or clear (a password for a clear key is ignored, as librdkafka does)."""
    key = _private_key(key_pem, key_password, key_path)
    try:
        certificates = x509.load_pem_x509_certificates(certificate_pem)
    except ValueError:
        raise ClientKeyError(f"cannot read the client certificate {certificate_path}: not a PEM certificate") from None
    spki = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    if key.public_key().public_bytes(*spki) != certificates[0].public_key().public_bytes(*spki):
        raise ClientKeyError(f"the client key {key_path} is not the key of the certificate {certificate_path}")
    return pkcs12.serialize_key_and_certificates(
        KEYSTORE_ALIAS, key, certificates[0], certificates[1:] or None,
        serialization.BestAvailableEncryption(keystore_password.encode()))


def _private_key(key_pem: bytes, password: str | None, key_path: str):
    encrypted = b"-----BEGIN ENCRYPTED PRIVATE KEY-----" in key_pem or b"Proc-Type: 4,ENCRYPTED" in key_pem
    if encrypted and not password:
        raise ClientKeyError(f"cannot read the client key {key_path}: it is encrypted and ssl_key_password is not set")
    try:
        key = serialization.load_pem_private_key(key_pem, password.encode() if encrypted and password else None)
    except (ValueError, TypeError, UnsupportedAlgorithm):
        problem = "wrong ssl_key_password?" if encrypted else "not a PEM private key"
        raise ClientKeyError(f"cannot read the client key {key_path}: {problem}") from None
    return key


def write_client_config(security: SecurityConfig, directory: Path) -> Path:
    """Write the client properties of ``security`` (and the keystore of mutual TLS, under a random
    password) into ``directory``, a private directory of the caller's, each file ``0600``; the
    properties file's path."""
    keystore = None
    if security.ssl_certificate_location and security.ssl_key_location:
        keystore = Keystore(str(directory / KEYSTORE_FILE), secrets.token_urlsafe(32))
        data = pkcs12_keystore(
            _read(security.ssl_certificate_location, "client certificate"), _read(security.ssl_key_location, "client key"),
            key_password=security.ssl_key_password, keystore_password=keystore.password,
            key_path=security.ssl_key_location, certificate_path=security.ssl_certificate_location)
        _write_private(Path(keystore.location), data)
    path = directory / PROPERTIES_FILE
    _write_private(path, properties_text(client_properties(security, keystore)).encode("ascii"))
    return path


def _read(path: str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as error:
        raise ClientKeyError(f"cannot read the {what} {path}: {error.strerror}") from None


def _write_private(path: Path, data: bytes) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    with os.fdopen(descriptor, "wb") as file:
        os.fchmod(descriptor, FILE_MODE)  # whatever the umask
        file.write(data)
