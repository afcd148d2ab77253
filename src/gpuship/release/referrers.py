"""What refers to a released image, found and copied along on `promote --to`, so a signature or
attestation verified on the candidate verifies on the promoted tag.

Two schemes are found (both, since tools write either):

- OCI 1.1 referrers: manifests whose `subject` is the image, listed by the referrers API
  (`GET /v2/<name>/referrers/<digest>`) or, where the registry has none, by the referrers tag
  schema (an index at tag `sha256-<hex>`, distribution-spec v1.1 "Referrers Tag Schema");
- cosign's tag schema: tags `sha256-<hex>.sig`, `.att` and `.sbom` in the image's repository
  (sigstore/cosign `pkg/oci/remote` `SignatureTag`/`AttestationTag`/`SBOMTag`).

gpuship's own release records also have the image as `subject`; they describe releases of the
source repository and stay there. Copying a referrer is copying its manifest tree (blobs mounted
or streamed, digest kept). On a target without the referrers API, the `sha256-<hex>` index is
extended (existing entries kept); a cosign tag is written unless the target already has that
tag on other content, which is kept and reported (two signature sets are not merged).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from gpuship.reference import Repository
from gpuship.registry.client import RegistryClient
from gpuship.registry.errors import NotFound
from gpuship.registry.manifest import MEDIA_OCI_INDEX, Descriptor, ImageIndex, parse_manifest
from gpuship.release.copy import BlobProgress, CopyStats, copy_manifest_tree
from gpuship.release.history import RECORD_TYPE

COSIGN_SUFFIXES = (".sig", ".att", ".sbom")


@dataclass(frozen=True)
class Referrer:
    """One manifest referring to the image: by `subject`, or by a cosign tag (`tag`)."""

    descriptor: Descriptor
    tag: str | None = None

    @property
    def digest(self) -> str:
        return self.descriptor.digest

    @property
    def kind(self) -> str:
        return f"tag {self.tag}" if self.tag else "subject"


@dataclass(frozen=True)
class ReferrerCopy:
    """What happened (or, in a dry run, would happen) to one referrer in the target."""

    referrer: Referrer
    # copy (content and tag), tag (content there, tag not), exists, kept-target-tag
    action: str


def digest_tag(digest: str) -> str:
    """`sha256-<hex>`: the referrers tag schema's (and cosign's) tag for a digest."""
    algorithm, _, encoded = digest.partition(":")
    return f"{algorithm}-{encoded}"[:128]


def find_referrers(client: RegistryClient, repo: Repository, digest: str) -> list[Referrer]:
    """Every referrer of `repo@digest` in `repo`: subject referrers, then cosign tags."""
    found = [
        Referrer(descriptor)
        for descriptor in client.referrers(repo.at(digest))
        if descriptor.artifact_type != RECORD_TYPE
    ]
    for suffix in COSIGN_SUFFIXES:
        tag = digest_tag(digest) + suffix
        head = client.head_manifest(repo.tag(tag))
        if head is not None:
            descriptor = Descriptor.model_validate(
                {"mediaType": head.media_type, "digest": head.digest, "size": head.size}
            )
            found.append(Referrer(descriptor, tag))
    return found


def plan_referrers(
    client: RegistryClient, source: Repository, target: Repository, digest: str
) -> list[ReferrerCopy]:
    """What copying the referrers of `source@digest` to `target` would do; reads only."""
    planned = []
    for referrer in find_referrers(client, source, digest):
        planned.append(ReferrerCopy(referrer, _action(client, target, referrer)))
    return planned


def _action(client: RegistryClient, target: Repository, referrer: Referrer) -> str:
    if referrer.tag is not None:
        head = client.head_manifest(target.tag(referrer.tag))
        if head is not None:
            return "exists" if head.digest == referrer.digest else "kept-target-tag"
    if client.head_manifest(target.at(referrer.digest)) is None:
        return "copy"
    return "exists" if referrer.tag is None else "tag"


def copy_referrers(
    client: RegistryClient,
    source: Repository,
    target: Repository,
    digest: str,
    *,
    progress: BlobProgress | None = None,
    stats: CopyStats | None = None,
) -> list[ReferrerCopy]:
    """Copy every referrer of `source@digest` into `target` (the image is already there)."""
    done = []
    for planned in plan_referrers(client, source, target, digest):
        referrer = planned.referrer
        if planned.action == "copy":
            fetched = client.get_manifest(source.at(referrer.digest))
            copy_manifest_tree(
                client,
                source,
                target,
                referrer.digest,
                fetched.data,
                fetched.media_type,
                progress=progress,
                stats=stats,
            )
        if referrer.tag is not None and planned.action in ("copy", "tag"):
            fetched = client.get_manifest(target.at(referrer.digest))
            client.put_manifest(target.tag(referrer.tag), fetched.data, fetched.media_type)
        done.append(planned)
    subject = [p.referrer.descriptor for p in done if p.referrer.tag is None]
    if subject and not client.has_referrers_api(target.at(digest)):
        extend_referrers_tag(client, target, digest, subject)
    return done


def extend_referrers_tag(
    client: RegistryClient, repo: Repository, digest: str, descriptors: list[Descriptor]
) -> None:
    """Add `descriptors` to the `sha256-<hex>` referrers index of `repo` (made if absent)."""
    tag = repo.tag(digest_tag(digest))
    try:
        fetched = client.get_manifest(tag)
    except NotFound:
        entries: list[dict[str, object]] = []
    else:
        current = parse_manifest(fetched.data, fetched.media_type)
        entries = (
            json.loads(fetched.data).get("manifests", []) if isinstance(current, ImageIndex) else []
        )
    known = {str(entry.get("digest")) for entry in entries}
    added = [
        d.model_dump(mode="json", by_alias=True, exclude_none=True, exclude={"platform"})
        for d in descriptors
        if d.digest not in known
    ]
    if not added:
        return
    index = {"schemaVersion": 2, "mediaType": MEDIA_OCI_INDEX, "manifests": entries + added}
    data = json.dumps(index, sort_keys=True, separators=(",", ":")).encode()
    client.put_manifest(tag, data, MEDIA_OCI_INDEX)
