"""The admission controller's own certificates, as YuniKorn's makes them: CAs and a serving certificate.

Two CAs live in a Secret, their expiries staggered, and both are in the webhooks' CA bundle: the one
that expires first is replaced while the other still vouches for the serving certificates signed
before, so a rotation never leaves a replica with a certificate the API server does not trust. Each
replica signs its own serving certificate with the CA that expires last; nothing here does I/O.

Keys are ECDSA P-256 (YuniKorn's are RSA 4096): as strong as RSA 3072, made in a millisecond rather
than seconds, and accepted by every API server.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_LIFETIME = datetime.timedelta(days=365)
# A CA that expires within this is replaced (YuniKorn's cutoff); the serving certificates are then
# signed by the other, so nothing in use expires before it is replaced.
CA_RENEW_BEFORE = datetime.timedelta(days=90)
SERVING_LIFETIME = datetime.timedelta(days=365)
SERVING_RENEW_BEFORE = datetime.timedelta(days=30)
BACKDATE = datetime.timedelta(minutes=5)  # for API servers whose clocks run a little behind


@dataclass(frozen=True)
class CertificateAuthority:
    cert_pem: bytes
    key_pem: bytes

    @property
    def cert(self) -> x509.Certificate:
        return x509.load_pem_x509_certificate(self.cert_pem)

    @property
    def not_after(self) -> datetime.datetime:
        return self.cert.not_valid_after_utc

    def usable(self, now: datetime.datetime) -> bool:
        """Readable, a CA, its key matching, and not expiring within CA_RENEW_BEFORE."""
        try:
            cert = self.cert
            key = serialization.load_pem_private_key(self.key_pem, password=None)
            constraints = cert.extensions.get_extension_for_class(x509.BasicConstraints).value
        except (ValueError, TypeError, x509.ExtensionNotFound):
            return False
        same_key = key.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        ) == cert.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        return constraints.ca and same_key and cert.not_valid_after_utc > now + CA_RENEW_BEFORE


@dataclass(frozen=True)
class ServingCertificate:
    chain_pem: bytes  # the certificate, then the CA that signed it
    key_pem: bytes
    not_after: datetime.datetime
    signed_by: datetime.datetime  # the signing CA's expiry, to tell which one it was


def make_ca(now: datetime.datetime, lifetime: datetime.timedelta = CA_LIFETIME) -> CertificateAuthority:
    key = ec.generate_private_key(ec.SECP256R1())
    # A name of its own: with two CAs in one bundle, a client finds the issuer by name first.
    unique = f"{x509.random_serial_number():x}"[:16]
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"pykorn-admission-ca-{now:%Y%m%d}-{unique}")])
    cert = (
        _builder(name, name, key.public_key(), now, now + lifetime)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_usage(cert_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return CertificateAuthority(_cert_pem(cert), _key_pem(key))


def make_serving(
    ca: CertificateAuthority, dns_names: list[str], now: datetime.datetime
) -> ServingCertificate:
    """A serving certificate for the webhook Service's names, valid no longer than its CA."""
    ca_cert = ca.cert
    ca_key = serialization.load_pem_private_key(ca.key_pem, password=None)
    key = ec.generate_private_key(ec.SECP256R1())
    not_after = min(now + SERVING_LIFETIME, ca_cert.not_valid_after_utc)
    # A short name of its own: the Service's names (a CN holds at most 64 characters) are in the SANs,
    # which is all a client checks.
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "pykorn-admission")])
    cert = (
        _builder(subject, ca_cert.subject, key.public_key(), now, not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(n) for n in dns_names]), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_cert.public_key()),  # type: ignore[arg-type]
            critical=False,
        )
        .sign(ca_key, hashes.SHA256())  # type: ignore[arg-type]
    )
    return ServingCertificate(
        _cert_pem(cert) + ca.cert_pem, _key_pem(key), not_after, ca_cert.not_valid_after_utc
    )


def service_names(service: str, namespace: str) -> list[str]:
    """The names the API server may call the Service by (the last is the one it uses)."""
    return [service, f"{service}.{namespace}", f"{service}.{namespace}.svc"]


def _builder(
    subject: x509.Name,
    issuer: x509.Name,
    public_key: ec.EllipticCurvePublicKey,
    now: datetime.datetime,
    not_after: datetime.datetime,
) -> x509.CertificateBuilder:
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(not_after)
    )


def _usage(cert_sign: bool) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def _cert_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
