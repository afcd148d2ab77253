"""Promotion as one all-or-nothing change of tags, with a record in the registry.

Order: read the source manifest (digest verified) and every target tag; refuse immutable
conflicts before writing anything; copy content to another repository if needed (untagged, so
harmless if it stops part-way), and with it what refers to the image (signatures, attestations,
SBOMs: `release/referrers.py`); write each tag and read it back; store the release record. If
any write fails, every tag already written is put back where it was (floating tags get their
old manifest bytes again, new tags are removed) and the outcome says exactly what happened.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from gpuship.errors import GpushipError
from gpuship.registry.artifact import EMPTY_CONFIG, ensure_empty_config
from gpuship.registry.client import FetchedManifest, RegistryClient
from gpuship.registry.errors import RegistryAuthError, RegistryRequestError
from gpuship.registry.manifest import MEDIA_OCI_EMPTY, MEDIA_OCI_MANIFEST
from gpuship.registry.reference import Reference, Repository, sha256_digest
from gpuship.release.config import ReleaseConfig
from gpuship.release.copy import BlobProgress, CopyStats, copy_manifest_tree
from gpuship.release.history import append_record, history_entries, read_history_index
from gpuship.release.policy import TagAction, TagRequest, TagStep, plan_tags
from gpuship.release.record import ReleaseRecord, TagChange, new_release_id, provenance
from gpuship.release.referrers import ReferrerCopy, copy_referrers


@dataclass(frozen=True)
class ReleaseRequest:
    """Put the manifest `source` (pinned by digest) under tags of `target`."""

    source: Reference
    target: Repository
    tags: tuple[TagRequest, ...]
    kind: Literal["promote", "rollback"] = "promote"
    rollback_of: str | None = None


@dataclass
class ReleaseOutcome:
    """What happened, tag by tag, including any restore after a failure."""

    steps: list[TagStep]
    record: ReleaseRecord
    record_digest: str | None = None
    written: list[str] = field(default_factory=list)
    restored: list[str] = field(default_factory=list)
    # tag -> where it points now (or why that is unknown) when it could not be put back.
    unrestored: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    copy: CopyStats | None = None
    # Signatures, attestations and SBOMs copied along with the image (promote --to).
    referrers: list[ReferrerCopy] = field(default_factory=list)

    @property
    def conflicts(self) -> list[TagStep]:
        """Immutable tags that already point elsewhere."""
        return [step for step in self.steps if step.action is TagAction.CONFLICT]

    @property
    def succeeded(self) -> bool:
        """True when every tag now points at the promoted digest and the record is stored."""
        return self.error is None and not self.conflicts


def read_tags(client: RegistryClient, repo: Repository, tags: list[str]) -> dict[str, str | None]:
    """Where each tag points now (None for a tag that does not exist)."""
    found: dict[str, str | None] = {}
    for tag in tags:
        head = client.head_manifest(repo.tag(tag))
        found[tag] = head.digest if head is not None else None
    return found


def release(
    client: RegistryClient,
    request: ReleaseRequest,
    config: ReleaseConfig,
    *,
    environ: Mapping[str, str],
    now: datetime,
    config_digest: str | None = None,
    progress: BlobProgress | None = None,
) -> ReleaseOutcome:
    """Promote (or roll back) and record it; see the module docstring for the guarantees."""
    assert request.source.digest is not None, "releases are by digest"
    manifest = client.get_manifest(request.source)
    target = request.target
    before = read_tags(client, target, [r.tag for r in request.tags])
    steps = plan_tags(request.tags, before, manifest.digest)
    origin = provenance(environ)
    record = ReleaseRecord(
        id=new_release_id(now),
        kind=request.kind,
        time=now,
        actor=origin["actor"],
        commit=origin["commit"],
        run_url=origin["run_url"],
        repository=str(target),
        source=str(request.source),
        digest=manifest.digest,
        media_type=manifest.media_type,
        tags=[TagChange.from_step(step) for step in steps],
        config_digest=config_digest,
        rollback_of=request.rollback_of,
    )
    outcome = ReleaseOutcome(steps=steps, record=record)
    if outcome.conflicts:
        names = ", ".join(f"{s.tag} (at {s.before})" for s in outcome.conflicts)
        outcome.error = f"immutable tags already point at another digest: {names}; nothing written"
        return outcome
    old = {
        step.before: client.get_manifest(target.at(step.before))
        for step in steps
        if step.action is TagAction.MOVE and step.before is not None
    }
    # Read (and validate) the history before any write: a foreign tag in its place, or a
    # history that changes while we write (a concurrent release), stops us early or is seen.
    history = read_history_index(client, target, config.history_tag)
    history_entries(history, target, config.history_tag)
    if target != request.source.repository:
        try:
            outcome.copy = copy_manifest_tree(
                client,
                request.source.repository,
                target,
                manifest.digest,
                manifest.data,
                manifest.media_type,
                progress=progress,
            )
            outcome.referrers = copy_referrers(
                client,
                request.source.repository,
                target,
                manifest.digest,
                progress=progress,
                stats=outcome.copy,
            )
        except GpushipError as error:
            outcome.error = f"copying content to {target} failed: {error}; no tag was written"
            return outcome
    writes = [step for step in steps if step.writes]
    for step in writes:
        try:
            _write_tag(client, target, step.tag, manifest)
        except GpushipError as error:
            outcome.error = f"writing tag {step.tag} failed: {_explain(error)}"
            # The failed PUT may still have landed (answer lost), so its tag is restored too.
            _restore(client, target, writes[: len(outcome.written) + 1], old, manifest, outcome)
            return outcome
        outcome.written.append(step.tag)
    if not writes:
        return outcome
    subject = {
        "mediaType": manifest.media_type,
        "digest": manifest.digest,
        "size": len(manifest.data),
    }
    try:
        current = read_history_index(client, target, config.history_tag)
        if (current and current.digest) != (history and history.digest):
            raise ConcurrentChange(
                f"release history {target}:{config.history_tag} changed while this release "
                "ran: another release is writing the same repository"
            )
        outcome.record_digest = append_record(
            client, target, config.history_tag, record, subject, config.history_limit, history
        )
    except GpushipError as error:
        outcome.error = f"storing the release record failed: {error}"
        _restore(client, target, writes, old, manifest, outcome)
        _restore_history(client, target, config.history_tag, history, outcome)
    return outcome


def _explain(error: GpushipError) -> str:
    """The error, saying so when the registry itself enforces immutability on the tag.

    ECR answers TAG_INVALID, Harbor 412, Docker Hub 403 for an immutable tag (reference §4).
    """
    if isinstance(error, RegistryRequestError) and (
        error.status == 412 or "TAG_INVALID" in error.codes or "immutable" in str(error).lower()
    ):
        return f"the registry holds this tag immutable ({error})"
    return str(error)


def _restore_history(
    client: RegistryClient,
    repo: Repository,
    tag: str,
    previous: FetchedManifest | None,
    outcome: ReleaseOutcome,
) -> None:
    """Put the history index back as it was, so no record describes a release undone."""
    try:
        head = client.head_manifest(repo.tag(tag))
        if head is None and previous is None:
            return
        if previous is None:
            remove_tag(client, repo, tag)
        elif head is None or head.digest != previous.digest:
            client.put_manifest(repo.tag(tag), previous.data, previous.media_type)
    except GpushipError as error:
        outcome.unrestored[tag] = f"release history may list the undone release ({error})"


def _write_tag(
    client: RegistryClient, repo: Repository, tag: str, manifest: FetchedManifest
) -> None:
    client.put_manifest(repo.tag(tag), manifest.data, manifest.media_type)
    now = client.resolve_digest(repo.tag(tag))
    if now != manifest.digest:
        raise ConcurrentChange(f"tag {tag} reads back as {now}: another writer changed it")


class ConcurrentChange(GpushipError):
    """A tag did not read back as written: someone else wrote it at the same time."""


def _restore(
    client: RegistryClient,
    repo: Repository,
    steps: list[TagStep],
    old: Mapping[str, FetchedManifest],
    manifest: FetchedManifest,
    outcome: ReleaseOutcome,
) -> None:
    """Put every step's tag back to its `before` digest, newest write first."""
    for step in reversed(steps):
        try:
            head = client.head_manifest(repo.tag(step.tag))
            current = head.digest if head is not None else None
            if current != step.before:
                if step.before is None:
                    remove_tag(client, repo, step.tag)
                else:
                    previous = old[step.before]
                    client.put_manifest(repo.tag(step.tag), previous.data, previous.media_type)
                head = client.head_manifest(repo.tag(step.tag))
                current = head.digest if head is not None else None
            if current == step.before:
                outcome.restored.append(step.tag)
            else:
                outcome.unrestored[step.tag] = f"now at {current or 'nothing'}"
        except GpushipError as error:
            outcome.unrestored[step.tag] = f"unknown ({error})"
            _settle_on_new(client, repo, step.tag, manifest, outcome)


def _settle_on_new(
    client: RegistryClient,
    repo: Repository,
    tag: str,
    manifest: FetchedManifest,
    outcome: ReleaseOutcome,
) -> None:
    """After a failed restore, make sure the tag is at least at the promoted digest.

    A tag removal by dummy manifest that stopped half-way would leave the tag on the dummy;
    pointing it at the promoted digest keeps the promise "old or new, never anything else".
    """
    try:
        head = client.head_manifest(repo.tag(tag))
        if head is not None and head.digest not in (manifest.digest, *_befores(outcome, tag)):
            client.put_manifest(repo.tag(tag), manifest.data, manifest.media_type)
            outcome.unrestored[tag] = f"left at the promoted digest {manifest.digest}"
    except GpushipError:
        return


def _befores(outcome: ReleaseOutcome, tag: str) -> tuple[str, ...]:
    return tuple(s.before for s in outcome.steps if s.tag == tag and s.before is not None)


def remove_tag(client: RegistryClient, repo: Repository, tag: str) -> None:
    """Remove a tag without touching the manifest it points at.

    OCI tag DELETE where supported (registry:3, Docker Hub); otherwise (registry:2 answers 400
    or 405) regclient's method: point the tag at a unique empty manifest and delete that by
    digest (regclient `scheme/reg/tag.go` TagDelete).
    """
    try:
        client.delete_manifest(repo.tag(tag))
        return
    except RegistryAuthError:
        raise
    except RegistryRequestError as error:
        if error.status not in (400, 404, 405, 501):
            raise
    ensure_empty_config(client, repo)
    dummy = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": MEDIA_OCI_MANIFEST,
            "config": {
                "mediaType": MEDIA_OCI_EMPTY,
                "digest": sha256_digest(EMPTY_CONFIG),
                "size": len(EMPTY_CONFIG),
            },
            "layers": [],
            "annotations": {"io.gpuship.delete-tag": tag, "io.gpuship.nonce": secrets.token_hex(8)},
        },
        sort_keys=True,
        separators=(",", ":"),
    ).encode()
    digest = client.put_manifest(repo.tag(tag), dummy, MEDIA_OCI_MANIFEST)
    client.delete_manifest(repo.at(digest))
