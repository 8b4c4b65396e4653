"""A certificate authority and certificates made on the fly for the secured local cluster
(``localkafka/secure.py``): PEM files that the broker (``ssl.*.type=PEM``), librdkafka,
kafka-python and the Java tools all read.

Nothing here is for production: keys are small and valid for a few days, and the CA's key lies
beside its certificate.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

VALID_DAYS = 7
KEY_BITS = 2048


@dataclass(frozen=True)
class Issued:
    """One certificate and its key, as written."""

    certificate: Path
    key: Path
    subject: str
    """The subject in RFC 4514 order as Kafka names the principal (``CN=...,OU=...,O=...``)."""


def _name(common_name: str, organization: str) -> x509.Name:
    # Built O, OU, CN: Kafka prints the principal in the reverse (RFC 2253) order, CN first.
    return x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization),
                      x509.NameAttribute(NameOID.ORGANIZATIONAL_UNIT_NAME, "local"),
                      x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)


def _write(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    path.chmod(0o600)


class Authority:
    """A self-signed CA in ``directory`` (``<name>-ca.pem``, ``<name>-ca.key``) that issues
    server and client certificates there."""

    def __init__(self, directory: Path, name: str = "kpulse-local"):
        self.directory = directory
        self.name = name
        self.certificate_path = directory / f"{name}-ca.pem"
        self._key_path = directory / f"{name}-ca.key"

    def create(self) -> Authority:
        self.directory.mkdir(parents=True, exist_ok=True)
        key = _key()
        subject = _name(f"{self.name} CA", self.name)
        now = datetime.datetime.now(datetime.UTC)
        certificate = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
                       .public_key(key.public_key()).serial_number(x509.random_serial_number())
                       .not_valid_before(now - datetime.timedelta(minutes=5))
                       .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
                       .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
                       .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                                    content_commitment=False, key_encipherment=False,
                                                    data_encipherment=False, key_agreement=False,
                                                    encipher_only=False, decipher_only=False), critical=True)
                       .sign(key, hashes.SHA256()))
        _write(self._key_path, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                 serialization.NoEncryption()))
        self.certificate_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        return self

    def issue(self, common_name: str, *, server: bool = False, key_password: str | None = None,
              organization: str = "kpulse") -> Issued:
        """A certificate for ``common_name`` (a server's also names 127.0.0.1 and localhost) and
        its key, PKCS#8, encrypted when ``key_password`` is given; files ``<cn>.pem``/``<cn>.key``."""
        ca_key = serialization.load_pem_private_key(self._key_path.read_bytes(), password=None)
        if not isinstance(ca_key, rsa.RSAPrivateKey):  # create() writes an RSA key
            raise TypeError(f"{self._key_path}: not an RSA private key ({type(ca_key).__name__})")
        ca_certificate = x509.load_pem_x509_certificate(self.certificate_path.read_bytes())
        key = _key()
        subject = _name(common_name, organization)
        now = datetime.datetime.now(datetime.UTC)
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(ca_certificate.subject)
                   .public_key(key.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.ExtendedKeyUsage(
                       [usage, ExtendedKeyUsageOID.CLIENT_AUTH] if server else [usage]), critical=False))
        if server:
            builder = builder.add_extension(x509.SubjectAlternativeName(
                [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        certificate = builder.sign(ca_key, hashes.SHA256())
        encryption = (serialization.BestAvailableEncryption(key_password.encode()) if key_password
                      else serialization.NoEncryption())
        stem = self.directory / common_name
        key_path, certificate_path = stem.with_suffix(".key"), stem.with_suffix(".pem")
        _write(key_path, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption))
        certificate_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
        return Issued(certificate=certificate_path, key=key_path, subject=subject.rfc4514_string())
