"""Records planted by someone who can push tags (a build token allowed to push `sha-*` tags can
push `gpuship.releases.*` too), against the real registry: rollback goes only to a digest the
chain of records shows the tag held, a re-run never completes an intent that contradicts
itself, `history` reports both (GSR106), and a repository that requires signed records
follows only records signed with its keys (`release.signatures`, `release/trust.py`).

Keys are real EC P-256 keys (`cryptography`), signatures checked the way `cosign verify-blob
--key` checks a blob's. Sigstore keyless signing needs GitHub's OIDC token and is not
implemented; nothing here stands in for it.
"""

from __future__ import annotations

import base64
from datetime import datetime, timedelta, timezone

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from release_images import RunCli, candidate_image, stable_and_candidate, tag_digest

from bed.oci import push
from bed.registry import Registry
from gpuship.reference import Repository
from gpuship.registry.client import RegistryClient
from gpuship.registry.manifest import parse_manifest
from gpuship.release.history import RECORD_ANNOTATION, record_tag, store_record
from gpuship.release.policy import TagAction, TagKind
from gpuship.release.record import ReleaseRecord, TagChange, new_release_id
from gpuship.release.signing import SIGNATURE_ANNOTATION, Signer

pytestmark = pytest.mark.integration

PREFIX = "gpuship.releases"


def _pem_pair() -> tuple[str, str]:
    key = ec.generate_private_key(ec.SECP256R1())
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private, public


def _signed_config(public: str, required: bool = True) -> str:
    indented = "\n".join(f"        {line}" for line in public.strip().splitlines())
    return (
        "release:\n  signatures:\n"
        f"    required: {'true' if required else 'false'}\n"
        f"    public-keys:\n      - |\n{indented}\n"
    )


def _plant(
    client: RegistryClient,
    repo: Repository,
    digest: str,
    changes: list[tuple[str, str | None, str]],
    *,
    state: str = "complete",
    later: timedelta = timedelta(minutes=5),
    signer: Signer | None = None,
) -> ReleaseRecord:
    """Store a record as an attacker with push access would: gpuship's own format."""
    when = datetime.now(timezone.utc) + later
    tags = [
        TagChange(
            tag=tag,
            kind=TagKind.FLOATING,
            before=before,
            after=after,
            action=TagAction.MOVE if before else TagAction.CREATE,
        )
        for tag, before, after in changes
    ]
    record = ReleaseRecord(
        id=new_release_id(when),
        kind="promote",
        time=when,
        actor="release-bot",
        repository=str(repo),
        source=f"{repo}@{digest}",
        digest=digest,
        media_type="application/vnd.oci.image.manifest.v1+json",
        tags=tags,
        state=state,  # type: ignore[arg-type]
    )
    subject = client.get_manifest(repo.at(digest))
    image = {"mediaType": subject.media_type, "digest": subject.digest, "size": len(subject.data)}
    store_record(client, repo, PREFIX, record, image, signer=signer)
    return record


def test_a_planted_record_that_does_not_join_the_chain_is_not_followed(
    registry: Registry, run_cli: RunCli
):
    repo, old, new = stable_and_candidate(registry.url, registry.host, "forged/newer")
    evil = push(registry.url, repo.name, candidate_image("forged-evil"))
    assert run_cli("promote", f"{repo}@{new}", "--move", "stable").code == 0
    client = RegistryClient(environ={})
    forged = _plant(client, repo, new, [("stable", evil, new)])
    result = run_cli("rollback", f"{repo}:stable")
    assert result.code == 2, result
    assert f"release {forged.id} says stable was at {evil}" in result.stderr
    assert "rollback does not follow it" in result.stderr
    assert tag_digest(client, repo, "stable") == new
    listed = run_cli("history", f"{repo}:stable")
    assert listed.code == 0
    findings = [f for f in listed.report["findings"] if f["rule"] == "GSR106"]
    assert len(findings) == 1 and forged.id in findings[0]["message"]
    # Rolling back to where the records say stable was works as before.
    assert run_cli("rollback", f"{repo}:stable", "--to", old).code == 0


def test_a_planted_intent_naming_another_digest_is_never_completed(
    registry: Registry, run_cli: RunCli
):
    repo, old, new = stable_and_candidate(registry.url, registry.host, "forged/intent")
    evil = push(registry.url, repo.name, candidate_image("forged-intent-evil"))
    client = RegistryClient(environ={})
    forged = _plant(
        client, repo, new, [("stable", old, evil)], state="intent", later=-timedelta(minutes=1)
    )
    promoted = run_cli("promote", f"{repo}@{new}", "--move", "stable")
    assert promoted.code == 0, promoted
    record = promoted.report["result"]["record"]
    assert record["id"] != forged.id
    assert [(t["before"], t["after"]) for t in record["tags"]] == [(old, new)]
    listed = run_cli("history", str(repo))
    messages = [f["message"] for f in listed.report["findings"] if f["rule"] == "GSR106"]
    assert any(forged.id in m and f"goes to {evil}" in m for m in messages), messages
    assert run_cli("rollback", f"{repo}:stable").code == 0
    assert tag_digest(client, repo, "stable") == old


def test_required_signatures_sign_records_and_ignore_unsigned_ones(
    registry: Registry, run_cli: RunCli
):
    private, public = _pem_pair()
    config = _signed_config(public)
    environ = {"GPUSHIP_SIGNING_KEY": private}
    repo, old, new = stable_and_candidate(registry.url, registry.host, "forged/signed")
    evil = push(registry.url, repo.name, candidate_image("forged-signed-evil"))
    promoted = run_cli(
        "promote", f"{repo}@{new}", "--move", "stable", environ=environ, config=config
    )
    assert promoted.code == 0, promoted
    client = RegistryClient(environ={})
    stored = client.get_manifest(
        repo.tag(record_tag(PREFIX, promoted.report["result"]["record"]["id"]))
    )
    annotations = parse_manifest(stored.data, stored.media_type).annotations
    # What `cosign verify-blob --key` checks: ECDSA P-256/SHA-256 over the record's bytes.
    public_key = serialization.load_pem_public_key(public.encode())
    assert isinstance(public_key, ec.EllipticCurvePublicKey)
    public_key.verify(
        base64.b64decode(annotations[SIGNATURE_ANNOTATION]),
        annotations[RECORD_ANNOTATION].encode(),
        ec.ECDSA(hashes.SHA256()),
    )
    # A chain that joins up (stable new -> evil -> new), planted unsigned, then signed with
    # another key: neither is followed, rollback goes where the signed record says.
    _plant(client, repo, evil, [("stable", new, evil)], later=timedelta(minutes=1))
    _plant(client, repo, new, [("stable", evil, new)], later=timedelta(minutes=2))
    other = Signer(ec.generate_private_key(ec.SECP256R1()))
    _plant(client, repo, evil, [("stable", new, evil)], later=timedelta(minutes=3), signer=other)
    _plant(client, repo, new, [("stable", evil, new)], later=timedelta(minutes=4), signer=other)
    listed = run_cli("history", f"{repo}:stable", config=config)
    messages = [f["message"] for f in listed.report["findings"] if f["rule"] == "GSR106"]
    assert sum("not signed" in m for m in messages) == 2, messages
    assert sum("by none of release.signatures.public-keys" in m for m in messages) == 2
    assert listed.report["result"]["current_release"] == promoted.report["result"]["record"]["id"]
    rolled = run_cli("rollback", f"{repo}:stable", environ=environ, config=config)
    assert rolled.code == 0, rolled
    assert tag_digest(client, repo, "stable") == old


def test_without_required_signatures_a_joined_up_forgery_is_followed(
    registry: Registry, run_cli: RunCli
):
    """The limit docs/operations/registry-access.md states: the chain check stops a record
    that does not join up, not planted records that do; required signatures stop those."""
    repo, _, new = stable_and_candidate(registry.url, registry.host, "forged/joined")
    evil = push(registry.url, repo.name, candidate_image("forged-joined-evil"))
    assert run_cli("promote", f"{repo}@{new}", "--move", "stable").code == 0
    client = RegistryClient(environ={})
    _plant(client, repo, evil, [("stable", new, evil)], later=timedelta(minutes=1))
    _plant(client, repo, new, [("stable", evil, new)], later=timedelta(minutes=2))
    assert run_cli("rollback", f"{repo}:stable").code == 0
    assert tag_digest(client, repo, "stable") == evil


def test_a_bad_signing_key_is_one_clear_line(registry: Registry, run_cli: RunCli):
    repo, _, new = stable_and_candidate(registry.url, registry.host, "forged/badkey")
    secret = "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n"
    result = run_cli(
        "promote", f"{repo}@{new}", "--move", "stable", environ={"GPUSHIP_SIGNING_KEY": secret}
    )
    assert result.code == 2
    assert "GPUSHIP_SIGNING_KEY is not a usable PEM private key" in result.stderr
    assert "bm90IGEga2V5" not in result.stderr and "Traceback" not in result.stderr
    assert tag_digest(RegistryClient(environ={}), repo, "stable") != new
