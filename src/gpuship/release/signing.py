"""Signatures on release records: who stored a record, checked with the repository's keys.

A record is signed as a blob, the way `cosign sign-blob --key` signs one: ECDSA P-256 over
SHA-256 of the record's JSON bytes (exactly the bytes stored), the DER signature in base64
(sigstore/cosign `pkg/signature`; `cosign verify-blob --key cosign.pub --signature SIG
record.json` checks it too). The signature rides in the record manifest's annotation
SIGNATURE_ANNOTATION. Keys are PEM: the private key from GPUSHIP_SIGNING_KEY (a secret; a PKCS#8
or SEC1 EC key, as `openssl genpkey` or `cosign import-key-pair` use; encrypted ones with
GPUSHIP_SIGNING_KEY_PASSWORD), the public keys in `release.signatures.public-keys`.

The `cryptography` package (pyca) does the ECDSA: a well-kept binding of OpenSSL that the test
bed already uses for its CA and cosign-style signatures; the `sigstore` package would add a
TUF client, Rekor and Fulcio clients and about fifteen dependencies for the keyless flow,
which needs GitHub's OIDC token to run at all.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from gpuship.errors import InputError

SIGNATURE_ANNOTATION = "io.gpuship.release.signature"
KEY_VARIABLE = "GPUSHIP_SIGNING_KEY"
PASSWORD_VARIABLE = "GPUSHIP_SIGNING_KEY_PASSWORD"  # noqa: S105 - the variable's name


@dataclass(frozen=True)
class Signer:
    """Signs records with one EC P-256 private key."""

    key: ec.EllipticCurvePrivateKey

    def sign(self, payload: bytes) -> str:
        """The base64 DER ECDSA P-256/SHA-256 signature of `payload`, deterministic (RFC
        6979): a release completed by another run stores the same record bytes."""
        algorithm = ec.ECDSA(hashes.SHA256(), deterministic_signing=True)
        return base64.b64encode(self.key.sign(payload, algorithm)).decode()


def signer_from(environ: Mapping[str, str]) -> Signer | None:
    """The signer GPUSHIP_SIGNING_KEY holds (None when it is unset or empty)."""
    pem = environ.get(KEY_VARIABLE, "").strip()
    if not pem:
        return None
    password = environ.get(PASSWORD_VARIABLE) or None
    try:
        key = serialization.load_pem_private_key(
            pem.encode(), password.encode() if password else None
        )
    except (ValueError, TypeError) as error:
        # The message never quotes the key; cryptography's names only what it expected.
        raise InputError(f"{KEY_VARIABLE} is not a usable PEM private key ({error})") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey) or not isinstance(key.curve, ec.SECP256R1):
        raise InputError(f"{KEY_VARIABLE} must be an EC P-256 key (cosign's kind)")
    return Signer(key)


def public_key(pem: str) -> ec.EllipticCurvePublicKey:
    """A PEM public key from the config, checked (ValueError saying why, for the config)."""
    try:
        key = serialization.load_pem_public_key(pem.encode())
    except (ValueError, TypeError) as error:
        raise ValueError(f"not a PEM public key: {error}") from None
    if not isinstance(key, ec.EllipticCurvePublicKey) or not isinstance(key.curve, ec.SECP256R1):
        raise ValueError("not an EC P-256 public key (cosign's kind)")
    return key


def verified(payload: bytes, signature: str | None, keys: Sequence[str]) -> bool | None:
    """True if one of `keys` (PEM) signed `payload`; False if it is signed by none of them or
    the signature is malformed; None when it carries no signature."""
    if signature is None:
        return None
    try:
        raw = base64.b64decode(signature, validate=True)
    except (binascii.Error, ValueError):
        return False
    for pem in keys:
        try:
            public_key(pem).verify(raw, payload, ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            continue
        return True
    return False
