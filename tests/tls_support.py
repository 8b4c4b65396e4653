"""A throwaway PKI for the tests of kpulse's TLS settings: a CA and a client certificate it signed,
written as PEM files, and the client key in each PEM form a user may have."""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID


@dataclass(frozen=True)
class ClientPki:
    """PEM files under one directory, and the client's key and certificate as objects."""

    ca_path: Path
    certificate_path: Path
    client_key: rsa.RSAPrivateKey
    client_certificate: x509.Certificate

    def key_file(self, form: str, password: str | None) -> Path:
        """The client key as PEM: ``pkcs8`` (BEGIN [ENCRYPTED] PRIVATE KEY) or ``traditional``
        (BEGIN RSA PRIVATE KEY, with DEK-Info when encrypted)."""
        formats = {"pkcs8": serialization.PrivateFormat.PKCS8,
                   "traditional": serialization.PrivateFormat.TraditionalOpenSSL}
        encryption = (serialization.BestAvailableEncryption(password.encode()) if password
                      else serialization.NoEncryption())
        path = self.ca_path.parent / f"client-{form}-{'encrypted' if password else 'clear'}.key"
        path.write_bytes(self.client_key.private_bytes(serialization.Encoding.PEM, formats[form], encryption))
        return path


def certificate(subject: str, key, issuer_name: str | None = None, issuer_key=None) -> x509.Certificate:
    """Valid for a day; a CA when self-signed (no issuer given)."""
    now = datetime.datetime.now(datetime.UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    issuer = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer_name or subject)])
    builder = (x509.CertificateBuilder().subject_name(name).issuer_name(issuer).public_key(key.public_key())
               .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
               .not_valid_after(now + datetime.timedelta(days=1)))
    if issuer_name is None:
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
    return builder.sign(issuer_key or key, hashes.SHA256())


def client_pki(directory: Path) -> ClientPki:
    """An EC CA and an RSA client certificate ``CN=kpulse-client`` it signed, in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca = certificate("kpulse test CA", ca_key)
    client_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    client = certificate("kpulse-client", client_key, "kpulse test CA", ca_key)
    (directory / "ca.pem").write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (directory / "client.pem").write_bytes(client.public_bytes(serialization.Encoding.PEM))
    return ClientPki(directory / "ca.pem", directory / "client.pem", client_key, client)
