"""Throwaway X.509 material for TLS tests: a CA, a loopback server certificate and client certificates.

Everything is made at test time (EC P-256 keys: fast to generate) and written as PEM files, so no
key ever lives in the repository and every run uses fresh ones.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class KeyPair:
    cert: Path
    key: Path


@dataclass(frozen=True)
class PKI:
    ca: Path  # the CA certificate: what clients trust and what the core checks client certs against
    server: KeyPair  # SAN 127.0.0.1 and localhost
    clients: dict[str, KeyPair]  # by common name
    other_ca: Path  # a second, unrelated CA: certificates it signed must not be accepted
    stranger: KeyPair  # a client certificate signed by other_ca


class _CA:
    def __init__(self, name: str) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        self.cert = (
            _builder(self.name, self.name, self.key.public_key())
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(_usage(cert_sign=True), critical=True)
            .sign(self.key, hashes.SHA256())
        )

    def issue(self, common_name: str, server: bool) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
        key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        purpose = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = (
            _builder(subject, self.name, key.public_key())
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(_usage(cert_sign=False), critical=True)
            .add_extension(x509.ExtendedKeyUsage([purpose]), critical=False)
        )
        if server:
            names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        return builder.sign(self.key, hashes.SHA256()), key


def _builder(
    subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
    )


def _usage(cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=not cert_sign,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def _write_cert(path: Path, cert: x509.Certificate) -> Path:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path


def _write_pair(
    directory: Path, name: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey
) -> KeyPair:
    key_path = directory / f"{name}.key"
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    key_path.chmod(0o600)
    return KeyPair(_write_cert(directory / f"{name}.crt", cert), key_path)


def make_pki(directory: Path, client_names: tuple[str, ...] = ("rm-a", "rm-b")) -> PKI:
    """A CA with a server certificate and one client certificate per name (CN = that name)."""
    ca, other = _CA("pykorn test CA"), _CA("someone else's CA")
    server = _write_pair(directory, "server", *ca.issue("pykorn core", server=True))
    clients = {
        name: _write_pair(directory, f"client-{name}", *ca.issue(name, server=False)) for name in client_names
    }
    stranger = _write_pair(directory, "stranger", *other.issue(client_names[0], server=False))
    return PKI(
        ca=_write_cert(directory / "ca.crt", ca.cert),
        server=server,
        clients=clients,
        other_ca=_write_cert(directory / "other-ca.crt", other.cert),
        stranger=stranger,
    )
