"""Retention against a registry: read tags, times and references, then delete by digest.

Times: the release record that put the tag on its digest (newest), else the image config's
`created` (for an index, its first runnable child's config). References: index children
(recursively) and referrers (referrers API, else the `sha256-<hex>` tag) of every kept digest.
Right before deleting, every kept tag is resolved again, and every tag of the digest about to
go: a digest a kept tag now points at, or whose tags moved, is skipped (a release may have run
in between, or one answer of the registry was wrong). Release records are never touched: their
tags are left out, and records that refer to a deleted image are not its orphans.

A DELETE whose answer was lost is settled by reading the digest again: gone is deleted, there
is failed, unreadable is reported as unknown.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from gpuship.documents import load_json
from gpuship.errors import EnvironmentUnavailable, GpushipError, InputError
from gpuship.registry.artifact import read_each
from gpuship.registry.client import RegistryClient
from gpuship.registry.errors import NotFound, RegistryRequestError
from gpuship.registry.manifest import ImageIndex, ImageManifest, parse_manifest
from gpuship.registry.reference import Repository
from gpuship.release.config import ReleaseConfig
from gpuship.release.history import RECORD_TYPE, load_history, record_id_of
from gpuship.release.policy import matches_any
from gpuship.release.retention import (
    DigestDecision,
    TagDecision,
    TagState,
    select_digests,
    select_tags,
)

Deleter = Callable[[str, tuple[str, ...]], None]


@dataclass
class PrunePlan:
    """Decisions for every tag and digest, and what an `--apply` run did."""

    tags: list[TagDecision]
    digests: list[DigestDecision]
    deleted: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    # Deletes whose outcome could not be read back (the registry stopped answering).
    unknown: dict[str, str] = field(default_factory=dict)
    # Why the run could not finish its work, when the registry stopped answering.
    interrupted: str | None = None

    @property
    def to_delete(self) -> list[DigestDecision]:
        """The digests selected for deletion."""
        return [d for d in self.digests if d.delete]


def _parse_time(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


class _Reader:
    """Reads manifests and configs once each."""

    def __init__(self, client: RegistryClient, repo: Repository) -> None:
        self.client = client
        self.repo = repo
        self._documents: dict[str, ImageManifest | ImageIndex | None] = {}

    def document(self, digest: str) -> ImageManifest | ImageIndex | None:
        if digest not in self._documents:
            try:
                fetched = self.client.get_manifest(self.repo.at(digest))
                self._documents[digest] = parse_manifest(fetched.data, fetched.media_type)
            except NotFound:
                self._documents[digest] = None
        return self._documents[digest]

    def created(self, digest: str) -> datetime | None:
        document = self.document(digest)
        if isinstance(document, ImageIndex):
            runnable = [d for d in document.manifests if not d.is_attestation]
            return self.created(runnable[0].digest) if runnable else None
        if document is None:
            return None
        data = self.client.read_blob(self.repo, document.config.digest)
        try:
            config = load_json(data, f"config {document.config.digest}", self.client.limits)
        except InputError:
            return None
        return _parse_time(config.get("created")) if isinstance(config, dict) else None

    def references(self, digest: str) -> list[str]:
        """Index children and referrers; release records refer to images but belong to the
        history, not to the image."""
        document = self.document(digest)
        children = (
            [d.digest for d in document.manifests] if isinstance(document, ImageIndex) else []
        )
        referrers = [
            d.digest
            for d in self.client.referrers(self.repo.at(digest))
            if d.artifact_type != RECORD_TYPE
        ]
        return children + referrers


def plan_prune(
    client: RegistryClient, repo: Repository, config: ReleaseConfig, now: datetime
) -> PrunePlan:
    """Read the repository and decide; writes nothing."""
    reader = _Reader(client, repo)
    tags = client.list_tags(repo)
    history = load_history(client, repo, config.history_tag, newest=config.history_limit, tags=tags)
    released: dict[tuple[str, str], datetime] = {}
    for record in history.records:
        for change in record.tags:
            released[(change.tag, change.after)] = record.time
    states: list[TagState] = []
    governed = [rule.pattern for rule in config.retention.keep]
    # Release records are history, never retention's to decide.
    candidates = [tag for tag in tags if record_id_of(config.history_tag, tag) is None]
    heads = read_each(lambda tag: client.head_manifest(repo.tag(tag)), candidates)
    for tag, head in zip(candidates, heads, strict=True):
        if head is None:
            continue  # deleted since listing
        created: datetime | None = released.get((tag, head.digest))
        if created is None and matches_any(governed, tag):
            created = reader.created(head.digest)
        states.append(TagState(tag, head.digest, created))
    decisions = select_tags(states, config, now)
    references = {d.digest: reader.references(d.digest) for d in decisions if d.keep}
    # Children of kept indexes need their own references too (nested indexes, referrers).
    pending = [child for children in references.values() for child in children]
    while pending:
        digest = pending.pop()
        if digest not in references:
            references[digest] = reader.references(digest)
            pending.extend(references[digest])
    digests = select_digests(states, decisions, references)
    return PrunePlan(decisions, digests + _orphans(reader, digests, set(references)))


def _orphans(
    reader: _Reader, digests: list[DigestDecision], protected: set[str]
) -> list[DigestDecision]:
    """Children and referrers of deleted digests that nothing kept references.

    They become untagged garbage otherwise, and registry:2.8's `garbage-collect
    --delete-untagged` is the very tool known to eat children of kept indexes (reference §7.6),
    so prune removes them itself, after their parent.
    """
    known = {d.digest for d in digests}
    found: list[DigestDecision] = []
    pending = [
        (d.digest, child) for d in digests if d.delete for child in reader.references(d.digest)
    ]
    while pending:
        parent, digest = pending.pop(0)
        if digest in known or digest in protected:
            continue
        known.add(digest)
        found.append(DigestDecision(digest, (), True, f"untagged child of deleted {parent[:19]}"))
        pending.extend((digest, child) for child in reader.references(digest))
    return found


def apply_prune(
    client: RegistryClient, repo: Repository, plan: PrunePlan, delete: Deleter
) -> PrunePlan:
    """Delete the selected digests, re-checking kept tags first; failures are recorded."""
    kept_now: dict[str, str] = {}
    for decision in plan.tags:
        if decision.keep:
            head = client.head_manifest(repo.tag(decision.tag))
            if head is not None:
                kept_now[head.digest] = decision.tag
    for target in plan.to_delete:
        if target.digest in kept_now:
            plan.skipped[target.digest] = f"kept tag {kept_now[target.digest]} points at it now"
            continue
        moved = _moved_since(client, repo, target, plan)
        if moved:
            plan.skipped[target.digest] = moved
            continue
        try:
            delete(target.digest, target.tags)
        except EnvironmentUnavailable as error:
            plan.unknown[target.digest] = str(error)
            plan.interrupted = plan.interrupted or str(error)
            continue
        except GpushipError as error:
            plan.failed[target.digest] = str(error)
            continue
        plan.deleted.append(target.digest)
    _settle(client, repo, plan)
    return plan


def _moved_since(
    client: RegistryClient, repo: Repository, target: DigestDecision, plan: PrunePlan
) -> str:
    """Why `target` must not be deleted now ("" if it may): one of its tags reads otherwise."""
    for tag in target.tags:
        try:
            head = client.head_manifest(repo.tag(tag))
        except GpushipError as error:
            if isinstance(error, EnvironmentUnavailable):
                plan.interrupted = plan.interrupted or str(error)
            return f"could not read tag {tag} again before deleting: {error}"
        if head is not None and head.digest != target.digest:
            return f"tag {tag} now points at {head.digest}, not at this digest"
    return ""


def _settle(client: RegistryClient, repo: Repository, plan: PrunePlan) -> None:
    """Read again each digest whose DELETE got no answer: gone, still there, or unknown."""
    with client.deadline.cleanup():
        for digest, error in list(plan.unknown.items()):
            try:
                present = client.head_manifest(repo.at(digest)) is not None
            except GpushipError:
                continue
            del plan.unknown[digest]
            if present:
                plan.failed[digest] = error
            else:
                plan.deleted.append(digest)


def registry_deleter(client: RegistryClient, repo: Repository) -> Deleter:
    """OCI DELETE by digest; where refused (Docker Hub answers 405), DELETE each tag."""

    def delete(digest: str, tags: tuple[str, ...]) -> None:
        try:
            client.delete_manifest(repo.at(digest))
        except NotFound:
            # Already gone: a retried DELETE whose first answer was lost lands here.
            return
        except RegistryRequestError as error:
            if error.status not in (400, 405) or not tags:
                raise
            for tag in tags:
                client.delete_manifest(repo.tag(tag))

    return delete
