"""Which release records may be followed, on data (`release/trust.py`), and their signatures
(`release/signing.py`) with real EC P-256 keys."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from gpuship.errors import InputError
from gpuship.release.policy import TagAction, TagKind
from gpuship.release.record import ReleaseRecord, TagChange
from gpuship.release.signing import Signer, signer_from, verified
from gpuship.release.trust import Trust, chain_break, chain_breaks, inconsistent, unsigned

A, B, C, Z = ("sha256:" + c * 64 for c in "abcf")
WHEN = datetime(2026, 11, 29, 17, 0, tzinfo=timezone.utc)


def _record(n: int, digest: str, before: str | None, *, after: str | None = None, action=None):
    after = after or digest
    if action is None:
        action = TagAction.CREATE if before is None else TagAction.MOVE
    change = TagChange(
        tag="stable", kind=TagKind.FLOATING, before=before, after=after, action=action
    )
    return ReleaseRecord(
        id=f"2026112{n}T170000Z-00000{n}",
        kind="promote",
        time=WHEN + timedelta(minutes=n),
        repository="r.io/app",
        source=f"r.io/app@{digest}",
        digest=digest,
        media_type="application/vnd.oci.image.manifest.v1+json",
        tags=[change],
    )


def test_a_record_that_contradicts_itself_is_inconsistent():
    assert inconsistent(_record(1, B, A)) is None
    assert "goes to " + Z in (inconsistent(_record(1, B, A, after=Z)) or "")
    assert "marked create" in (inconsistent(_record(1, B, A, action=TagAction.CREATE)) or "")
    assert "marked move" in (inconsistent(_record(1, B, B, action=TagAction.MOVE)) or "")


def test_a_move_joins_the_chain_of_its_tag():
    first, second = _record(1, B, A), _record(2, C, B)
    assert chain_breaks([first, second]) == []
    forged = _record(3, C, Z)  # says stable came from Z, which no record shows it held
    found = chain_break([first, second, forged], forged, "stable")
    assert found is not None and "no other record shows stable there" in found
    # Two releases that ran at once both moved it from the digest they read.
    sibling = _record(3, A, B)
    assert chain_break([first, second, sibling], sibling, "stable") is None
    # A planted oldest record does not make the real one's origin followed silently.
    planted = _record(0, B, Z)
    assert chain_break([planted, first], first, "stable") is not None
    assert [r.id for r, _ in chain_breaks([planted, first])] == [first.id]


def test_signatures_are_cosign_blob_signatures_and_deterministic():
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    signer = signer_from({"GPUSHIP_SIGNING_KEY": pem})
    assert signer is not None and signer_from({}) is None
    payload = _record(1, B, A).to_json()
    signature = signer.sign(payload)
    assert signature == signer.sign(payload)  # RFC 6979: every run stores the same bytes
    assert verified(payload, signature, [public]) is True
    assert verified(payload + b" ", signature, [public]) is False
    assert verified(payload, "not base64!", [public]) is False
    other = Signer(ec.generate_private_key(ec.SECP256R1()))
    assert verified(payload, other.sign(payload), [public]) is False
    assert verified(payload, None, [public]) is None


def test_what_trust_does_not_follow():
    keyed = Trust(("key",), required=False)
    assert unsigned(None, Trust()) is None
    assert unsigned(None, keyed) is None
    assert unsigned(False, keyed) is not None
    assert unsigned(None, Trust(("key",), required=True)) is not None
    assert unsigned(True, Trust(("key",), required=True)) is None


def test_a_key_that_is_not_p256_is_refused_in_one_line():
    rsa_like = ec.generate_private_key(ec.SECP384R1()).private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    with pytest.raises(InputError, match="EC P-256"):
        signer_from({"GPUSHIP_SIGNING_KEY": rsa_like.decode()})
