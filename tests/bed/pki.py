"""Keys and certificates for the bed: a self-signed CA with TLS server certificates for
127.0.0.1, and a token-signing key with its self-signed certificate (docker-registry's
`auth.token.rootcertbundle`). Made with the `cryptography` package, never shared between runs.
"""

from __future__ import annotations

import base64
import datetime
import ipaddress
import json
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import NameOID

_VALID = datetime.timedelta(days=2)


def _key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _write_key(key: rsa.RSAPrivateKey, path: Path) -> Path:
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return path


def _self_signed(key: rsa.RSAPrivateKey, common_name: str, *, ca: bool) -> x509.Certificate:
    now = datetime.datetime.now(datetime.timezone.utc)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + _VALID)
    )
    if ca:
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=0), True)
        builder = builder.add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            True,
        )
    return builder.sign(key, hashes.SHA256())


@dataclass(frozen=True)
class ServerCert:
    """A TLS server certificate (PEM) and its key, for `ssl.SSLContext.load_cert_chain`."""

    cert_path: Path
    key_path: Path


class CertificateAuthority:
    """A throwaway CA: `cert_path` is what clients are told to trust."""

    def __init__(self, directory: Path, name: str = "gpuship bed CA") -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self._key = _key()
        self._cert = _self_signed(self._key, name, ca=True)
        self.cert_path = directory / "ca.crt"
        self.cert_path.write_bytes(self._cert.public_bytes(serialization.Encoding.PEM))

    def trusted_in(self, certs_dir: Path, host: str) -> Path:
        """Put this CA where Docker's per-registry trust looks for `host`
        (`certs_dir/<host>/ca.crt`); returns `certs_dir`, for `GPUSHIP_CERTS_DIR`."""
        (certs_dir / host).mkdir(parents=True, exist_ok=True)
        (certs_dir / host / "ca.crt").write_bytes(self.cert_path.read_bytes())
        return certs_dir

    def server_cert(
        self, name: str, hosts: tuple[str, ...] = ("127.0.0.1", "localhost")
    ) -> ServerCert:
        """A certificate for `hosts` (IP addresses or DNS names) signed by this CA."""
        key = _key()
        now = datetime.datetime.now(datetime.timezone.utc)
        names: list[x509.GeneralName] = []
        for host in hosts:
            try:
                names.append(x509.IPAddress(ipaddress.ip_address(host)))
            except ValueError:
                names.append(x509.DNSName(host))
        cert = (
            x509.CertificateBuilder()
            .subject_name(_name(name))
            .issuer_name(self._cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + _VALID)
            .add_extension(x509.SubjectAlternativeName(names), False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), True)
            .sign(self._key, hashes.SHA256())
        )
        cert_path = self.directory / f"{name}.crt"
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        return ServerCert(cert_path, _write_key(key, self.directory / f"{name}.key"))


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class TokenSigner:
    """Signs RS256 JWTs the way distribution's token auth checks them: the signing certificate
    travels in the `x5c` header and is also the registry's `rootcertbundle`."""

    def __init__(self, directory: Path, issuer: str) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._key = _key()
        cert = _self_signed(self._key, issuer, ca=False)
        self._x5c = base64.b64encode(cert.public_bytes(serialization.Encoding.DER)).decode()
        self.cert_path = directory / "token-signer.crt"
        self.cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))

    def sign(self, claims: dict[str, object]) -> str:
        """A compact JWS of `claims`."""
        header = {"typ": "JWT", "alg": "RS256", "x5c": [self._x5c]}
        signing_input = (
            f"{_b64url(json.dumps(header).encode())}.{_b64url(json.dumps(claims).encode())}"
        )
        signature = self._key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
        return f"{signing_input}.{_b64url(signature)}"
