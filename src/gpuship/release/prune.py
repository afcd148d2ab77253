"""Retention against a registry: read tags, times and references, then delete by digest.

Times: the release record that put the tag on its digest (newest), else the image config's
`created` (for an index, its first runnable child's config). References: index children
(recursively) and referrers (referrers API, else the `sha256-<hex>` tag) of every kept digest,
of every digest an unfinished release names (every intent without its record, however old:
`release.history-limit` bounds the records read for release times, not what is protected),
and of every rollback target (`release/targets.py`: from the same history, the digests the
newest `release.retention.keep-releases` releases of each floating tag moved it from, and
their own). Right before each delete, the tags and the release history are read again
(`release/claims.py`): a digest any tag points at now, or a release recorded or under way since
the plan names or moved a floating tag from, or whose tags moved, is skipped; after each
delete the history is read once more, and a digest a release claimed meanwhile is put back.
Release records are never touched: their tags are left out, and records that refer to a
deleted image are not its orphans.

A DELETE whose answer was lost is settled by reading the digest again: gone is deleted, there
is failed, unreadable is reported as unknown.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from gpuship.documents import load_json
from gpuship.errors import (
    EnvironmentUnavailable,
    GpushipError,
    InputError,
    interrupt_exit_code,
    interrupt_name,
)
from gpuship.reference import Repository
from gpuship.registry.artifact import read_each
from gpuship.registry.client import RegistryClient
from gpuship.registry.errors import NotFound, RegistryRequestError
from gpuship.registry.manifest import ImageIndex
from gpuship.release.claims import Claims, ContentReader, claims_at_plan
from gpuship.release.config import ReleaseConfig
from gpuship.release.history import is_history_tag, load_history, unfinished_releases
from gpuship.release.policy import matches_any
from gpuship.release.retention import (
    DigestDecision,
    TagDecision,
    TagState,
    closure,
    select_digests,
    select_tags,
)
from gpuship.release.targets import rollback_targets

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
    # Digests deleted, then put back because a release claimed them meanwhile.
    restored: dict[str, str] = field(default_factory=dict)
    # Rollback targets the repository holds, each kept (digest -> which tag and release).
    targets: dict[str, str] = field(default_factory=dict)
    # Why the run could not finish its work: the registry stopped answering, or a signal.
    interrupted: str | None = None
    # The exit code of a run stopped by a signal (128 + its number).
    signal_exit: int | None = None
    # What the plan read, to check each delete against the registry at that moment.
    claims: Claims | None = field(default=None, repr=False, compare=False)

    @property
    def to_delete(self) -> list[DigestDecision]:
        """The digests selected for deletion."""
        return [d for d in self.digests if d.delete]


def _parse_time(value: object) -> datetime | None:
    """An image config's `created`, which the OCI image spec (config.md) says is RFC 3339
    section 5.6: with an offset. Without one it is local time in an unknown zone, so its
    age is unknown (None), and retention keeps the tag (`retention._rule_keeps`)."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def _created(reader: ContentReader, digest: str) -> datetime | None:
    document = reader.document(digest)
    if isinstance(document, ImageIndex):
        runnable = [d for d in document.manifests if not d.is_attestation]
        return _created(reader, runnable[0].digest) if runnable else None
    if document is None:
        return None
    data = reader.client.read_blob(reader.repo, document.config.digest)
    try:
        config = load_json(data, f"config {document.config.digest}", reader.client.limits)
    except InputError:
        return None
    return _parse_time(config.get("created")) if isinstance(config, dict) else None


def plan_prune(
    client: RegistryClient, repo: Repository, config: ReleaseConfig, now: datetime
) -> PrunePlan:
    """Read the repository and decide; writes nothing."""
    reader = ContentReader(client, repo)
    prefix = config.history_tag
    tags = client.list_tags(repo)
    history = load_history(client, repo, prefix, newest=config.history_limit, tags=tags)
    released: dict[tuple[str, str], datetime] = {}
    for record in history.records:
        for change in record.tags:
            released[(change.tag, change.after)] = record.time
    states: list[TagState] = []
    governed = [rule.pattern for rule in config.retention.keep]
    # Release records and intents are history, never retention's to decide.
    candidates = [tag for tag in tags if tag == prefix or not is_history_tag(prefix, tag)]
    heads = read_each(lambda tag: client.head_manifest(repo.tag(tag)), candidates)
    for tag, head in zip(candidates, heads, strict=True):
        if head is None:
            continue  # deleted since listing
        created: datetime | None = released.get((tag, head.digest))
        if created is None and matches_any(governed, tag):
            created = _created(reader, head.digest)
        states.append(TagState(tag, head.digest, created))
    decisions = select_tags(states, config, now)
    # A release under way (or interrupted) claims its digest before its tags move: every one,
    # however old (history-limit bounds what the history lists, not what it protects).
    unfinished = unfinished_releases(client, repo, prefix, tags)
    claimed = {record.digest for record in unfinished}
    targets = rollback_targets(history.entries, config.retention.keep_releases, unfinished)
    # A target already gone has nothing to keep (rollback to it says so itself).
    targets = {digest: why for digest, why in targets.items() if reader.fetched(digest)}
    roots = [d.digest for d in decisions if d.keep] + sorted(claimed) + sorted(targets)
    # Children of kept indexes need their own references too (nested indexes, referrers).
    references = {digest: reader.references(digest) for digest in closure(roots, reader.references)}
    digests = select_digests(states, decisions, references, claimed, targets)
    claims = claims_at_plan(client, repo, prefix, reader, tags, unfinished)
    orphans = _orphans(reader, digests, set(references))
    return PrunePlan(decisions, digests + orphans, targets=targets, claims=claims)


def _orphans(
    reader: ContentReader, digests: list[DigestDecision], protected: set[str]
) -> list[DigestDecision]:
    """Children and referrers of deleted digests that nothing kept references.

    They become untagged garbage otherwise, and registry:2.8's `garbage-collect
    --delete-untagged` is the very tool known to eat children of kept indexes (reference §7.6),
    so prune removes them itself, after their parent.
    """
    known = {d.digest for d in digests}
    deleted = [d.digest for d in digests if d.delete]
    return [
        DigestDecision(digest, (), True, f"untagged child of deleted {parent[:19]}")
        for digest, parent in closure(deleted, reader.references, known | protected).items()
        if parent is not None
    ]


def apply_prune(
    client: RegistryClient, repo: Repository, plan: PrunePlan, delete: Deleter
) -> PrunePlan:
    """Delete the selected digests, each only if nothing claims it right before its delete,
    and put back one a release claimed meanwhile; failures are recorded. A signal stops the
    run after settling the delete in flight."""
    assert plan.claims is not None, "apply the plan plan_prune made"
    current: DigestDecision | None = None  # the digest whose delete (or re-check) runs
    try:
        for target in plan.to_delete:
            why = _blocker(plan.claims, target, plan)
            if why:
                plan.skipped[target.digest] = why
                continue
            current = target
            _delete(delete, target, plan)
            if target.digest in plan.deleted:
                _reclaim(plan.claims, target, plan)
            elif target.digest in plan.failed:
                _claimed_meanwhile(plan.claims, target, plan)
            current = None
    except KeyboardInterrupt as interrupt:
        plan.interrupted = f"interrupted by {interrupt_name(interrupt)}"
        plan.signal_exit = interrupt_exit_code(interrupt)
        if current is not None:
            _interrupted_at(client, current, plan)
    _settle(client, repo, plan)
    return plan


def _interrupted_at(client: RegistryClient, target: DigestDecision, plan: PrunePlan) -> None:
    """Settle the digest a signal interrupted: its DELETE may or may not have landed (read
    again by `_settle`), or it was deleted and the re-check after it had not run."""
    assert plan.claims is not None
    if target.digest in plan.deleted:  # not put back yet, or not known to be needed
        with client.deadline.cleanup():
            _reclaim(plan.claims, target, plan)
    elif all(target.digest not in found for found in (plan.failed, plan.unknown, plan.restored)):
        plan.unknown[target.digest] = f"{plan.interrupted} while deleting it"


def _blocker(claims: Claims, target: DigestDecision, plan: PrunePlan) -> str:
    """Why `target` must not be deleted now ("" if it may)."""
    try:
        return claims.blocker(target)
    except GpushipError as error:
        if isinstance(error, EnvironmentUnavailable):
            plan.interrupted = plan.interrupted or str(error)
        return f"could not read the tags and history again before deleting: {error}"


def _delete(delete: Deleter, target: DigestDecision, plan: PrunePlan) -> None:
    try:
        delete(target.digest, target.tags)
    except EnvironmentUnavailable as error:
        plan.unknown[target.digest] = str(error)
        plan.interrupted = plan.interrupted or str(error)
        return
    except GpushipError as error:
        plan.failed[target.digest] = str(error)
        return
    plan.deleted.append(target.digest)


def _claimed_meanwhile(claims: Claims, target: DigestDecision, plan: PrunePlan) -> None:
    """A DELETE refused while a release wrote the same manifest is no failure of prune: the
    digest is claimed now, as the check before it would have found a moment later
    (registry:2 answers 400 DIGEST_INVALID when a DELETE meets a PUT of its manifest)."""
    try:
        why = claims.blocker(target)
    except GpushipError:
        return
    if why:
        error = plan.failed.pop(target.digest)
        plan.skipped[target.digest] = f"{why} (claimed while its DELETE ran; it failed: {error})"


def _reclaim(claims: Claims, target: DigestDecision, plan: PrunePlan) -> None:
    """Put `target` back if a release claimed it while it was being deleted."""
    try:
        why = claims.reclaim(target)
    except GpushipError as error:
        plan.interrupted = plan.interrupted or (
            f"{target.digest} was deleted, then whether a release claimed it meanwhile could "
            f"not be read: {error}"
        )
        return
    if why:
        plan.deleted.remove(target.digest)
        plan.restored[target.digest] = f"deleted, then put back: {why}"


def _settle(client: RegistryClient, repo: Repository, plan: PrunePlan) -> None:
    """Read again each digest whose DELETE got no answer: gone (then checked for a release
    that claimed it meanwhile), still there, or unknown."""
    targets = {target.digest: target for target in plan.to_delete}
    with client.deadline.cleanup():
        for digest, error in list(plan.unknown.items()):
            try:
                present = client.head_manifest(repo.at(digest)) is not None
            except GpushipError:
                continue
            del plan.unknown[digest]
            if present:
                plan.failed[digest] = error
                continue
            plan.deleted.append(digest)
            if plan.claims is not None:
                _reclaim(plan.claims, targets[digest], plan)


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
