"""Promotion as one all-or-nothing change of tags, recorded in the registry.

Order: read the source manifest (digest verified) and every target tag (GET: the digest is
checked against the bytes, and the old bytes are kept for a restore); refuse immutable
conflicts before writing anything; copy content to another repository if needed (untagged, so
harmless if it stops part-way), and with it what refers to the image (signatures, attestations,
SBOMs); store the release's intent; give way if another release publishes one of its new
immutable tags at another digest (`contention.py`: the intents arbitrate); write each tag and
read it back (within `release.consistency-window`: `consistency.py`); store the complete release
record under its own tag; read the written tags once more (a prune that deleted the digest
meanwhile took them away: they are written again); remove the intent; close the unfinished
releases it leaves nothing of (`intent.superseded`). A complete record exists only for a
release whose tags were all written. A tag write the registry refuses for a manifest or blob
it lacks, once undone, reads the candidate again: part of it gone (a prune deleted it while
the release ran) makes it an input error, exit 2 (`candidate.py`).

Stopped part-way (SIGINT or SIGTERM, the registry gone, the process killed), a release puts
back what it wrote, as after any failure, and closes its intent (an abandoned record, and the
intent removed where the registry deletes manifests); what it could not put back (killed, the
registry gone, a signal repeated) keeps the intent, which `history` lists as
unfinished, `rollback` can undo, and the same command run again completes (`release/intent.py`).

Registries have no compare-and-swap on tags, so other writers are expected:
- a floating tag read back at another digest was moved by a later writer: the release still
  happened, the report says where the tag is now;
- an immutable tag read back at another digest was created by someone else at the same time:
  a conflict, the release fails;
- when a release fails after writing, only tags this run wrote are put back, and each only if
  it still holds what this run wrote, read again right before its restore; a tag another
  writer has moved since is left alone and the report says so. Between that read and the
  restore's PUT no registry lets us lock the tag; the window is one round trip.

The outcome says, tag by tag, what the registry holds at the end, as far as this run knows.
"""

from __future__ import annotations

import enum
import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from gpuship.errors import (
    EXIT_FAILED,
    EnvironmentUnavailable,
    GpushipError,
    interrupt_exit_code,
    interrupt_name,
)
from gpuship.reference import Reference, Repository, sha256_digest
from gpuship.registry.artifact import EMPTY_CONFIG, ensure_empty_config
from gpuship.registry.client import FetchedManifest, RegistryClient
from gpuship.registry.errors import NotFound, RegistryAuthError, RegistryRequestError
from gpuship.registry.manifest import MEDIA_OCI_EMPTY, MEDIA_OCI_MANIFEST
from gpuship.release.candidate import (
    CandidateGone,
    gone_while_running,
    missing_part,
    read_candidate,
    refused_as_missing,
)
from gpuship.release.config import ReleaseConfig
from gpuship.release.consistency import digest_of, read_after_write, read_tag
from gpuship.release.contention import arbitrate
from gpuship.release.copy import BlobProgress, CopyStats, copy_manifest_tree
from gpuship.release.history import (
    RecordUncertain,
    close_intent,
    close_unfinished,
    delete_record,
    record_manifest,
    records_since,
    store_record,
    tag_of,
    unfinished_releases,
)
from gpuship.release.intent import resumable, steps_of, superseded
from gpuship.release.policy import TagAction, TagKind, TagRequest, TagStep, plan_tags
from gpuship.release.record import (
    RecordState,
    ReleaseRecord,
    TagChange,
    new_release_id,
    provenance,
)
from gpuship.release.referrers import ReferrerCopy, copy_referrers
from gpuship.release.signing import Signer, signer_from
from gpuship.release.trust import Trust


@dataclass(frozen=True)
class ReleaseRequest:
    """Put the manifest `source` (pinned by digest) under tags of `target`.

    `expected`: digests some tags must still have when the release reads them (a rollback
    decided from them); otherwise nothing is written. `refusal`: why nothing may be written,
    decided before (a rollback whose tag moved after it started); the release reports it.
    """

    source: Reference
    target: Repository
    tags: tuple[TagRequest, ...]
    kind: Literal["promote", "rollback"] = "promote"
    rollback_of: str | None = None
    expected: Mapping[str, str | None] = field(default_factory=dict)
    refusal: str | None = None


class TagFate(str, enum.Enum):
    """What became of one tag in this run."""

    UNCHANGED = "unchanged"  # already at the digest: nothing to write
    WRITTEN = "written"  # written and read back at the digest
    SUPERSEDED = "superseded"  # written, then read back at a later writer's digest
    NOT_WRITTEN = "not written"  # the release stopped before it (or its write never landed)
    RESTORED = "restored"  # written, then put back at its previous digest
    LEFT = "left alone"  # moved by another writer since this run wrote it: not touched
    NOT_RESTORED = "NOT restored"  # still at the released digest: could not be put back
    UNKNOWN = "unknown"  # written (or maybe), then the registry could not be read
    REFUSED = "refused"  # an immutable tag at another digest
    PENDING = "may be written"  # its write failed or was not read back; settled by the undo


@dataclass
class TagResult:
    """One tag's fate and what the registry holds for it (`now`; None: no such tag)."""

    step: TagStep
    fate: TagFate
    now: str | None
    known: bool = True
    note: str = ""
    # Its PUT got no answer (a timeout, a signal): it may still land after this run ends.
    in_flight: bool = False


@dataclass
class ReleaseOutcome:
    """What happened, tag by tag, including any restore after a failure."""

    steps: list[TagStep]
    record: ReleaseRecord
    tags: dict[str, TagResult] = field(default_factory=dict)
    record_digest: str | None = None
    record_state: RecordState = "none"
    error: str | None = None
    # Exit code of a failed release: 3 when the registry stopped answering, 2 when the
    # candidate was deleted while it ran, 128 + the signal when one stopped it, else 1.
    exit_code: int = EXIT_FAILED
    # The registry's error that failed it, if one did.
    cause: GpushipError | None = None
    copy: CopyStats | None = None
    # Signatures, attestations and SBOMs copied along with the image (promote --to).
    referrers: list[ReferrerCopy] = field(default_factory=list)
    # The unfinished release this run completes (its id is the record's), if any.
    resumed: str | None = None
    # The intent's PUT was sent (so it may be stored) and it was not removed since; its
    # manifest digest once the registry said it is stored.
    intent_sent: bool = False
    intent_digest: str | None = None
    # The tags this run writes (those not yet at the digest).
    writes: list[TagStep] = field(default_factory=list)
    # Things to tell that change nothing about the outcome.
    warnings: list[str] = field(default_factory=list)
    # The signal that stopped the run (SIGINT, SIGTERM), if one did.
    stopped_by: str | None = None
    # The repository's unfinished releases as this run read them, and the complete records
    # stored since the oldest of them started; the unfinished ones this run closed.
    unfinished: list[ReleaseRecord] = field(default_factory=list)
    later: list[ReleaseRecord] = field(default_factory=list)
    closed: list[str] = field(default_factory=list)
    # Signs every record this run stores (GPUSHIP_SIGNING_KEY), if set.
    signer: Signer | None = None

    @property
    def conflicts(self) -> list[TagStep]:
        """Immutable tags that already point elsewhere."""
        return [step for step in self.steps if step.action is TagAction.CONFLICT]

    @property
    def succeeded(self) -> bool:
        """True when every tag was written (or already right) and the record is stored."""
        return self.error is None and not self.conflicts

    def with_fate(self, *fates: TagFate) -> list[str]:
        """The tags whose fate is one of `fates`, in step order."""
        return [tag for tag, result in self.tags.items() if result.fate in fates]

    def fail(self, message: str, cause: GpushipError | None = None) -> None:
        """Mark the release failed; an unreachable registry makes the exit code 3, a
        candidate deleted meanwhile 2."""
        self.error, self.cause = message, cause
        if isinstance(cause, (EnvironmentUnavailable, CandidateGone)):
            self.exit_code = cause.exit_code


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
    signer = signer_from(environ)
    manifest = read_candidate(client, request.source)
    target = request.target
    old = {r.tag: read_tag(client, target, r.tag) for r in request.tags}
    before = {tag: digest_of(fetched) for tag, fetched in old.items()}
    unfinished, later = _unfinished(client, target, config)
    resumed = resumable(unfinished, later, request.kind, manifest.digest, before)
    if resumed is not None:
        steps, record = steps_of(resumed), resumed.as_state("complete")
    else:
        steps = plan_tags(request.tags, before, manifest.digest)
        record = _record(request, manifest, steps, provenance(environ), now, config_digest)
    resumed_id = resumed.id if resumed is not None else None
    outcome = ReleaseOutcome(steps, record, resumed=resumed_id, unfinished=unfinished, later=later)
    outcome.signer = signer
    outcome.tags = {step.tag: _first(step, before[step.tag], resumed) for step in steps}
    outcome.writes = [s for s in steps if s.writes and before[s.tag] != s.after]
    try:
        _carry_out(client, request, config, manifest, old, outcome, progress)
    except KeyboardInterrupt as interrupt:
        _stopped(client, target, config, manifest, old, outcome, interrupt)
    return outcome


def _unfinished(
    client: RegistryClient, repo: Repository, config: ReleaseConfig
) -> tuple[list[ReleaseRecord], list[ReleaseRecord]]:
    """The releases of `repo` still under way or interrupted (intents without a record), and
    the complete records stored since the oldest of them started (none read if none is)."""
    try:
        tags = client.list_tags(repo)
    except NotFound:
        return [], []  # a repository promote --to creates
    trust = Trust.of(config.signatures)
    unfinished = unfinished_releases(client, repo, config.history_tag, tags, trust)
    if not unfinished:
        return [], []
    return unfinished, records_since(client, repo, config.history_tag, tags, unfinished[0], trust)


def _first(step: TagStep, now: str | None, resumed: ReleaseRecord | None) -> TagResult:
    """A tag's fate before this run writes anything."""
    if resumed is not None and step.writes and now == step.after:
        note = f"written by the interrupted run of release {resumed.id}"
        return TagResult(step, TagFate.UNCHANGED, now, note=note)
    return TagResult(step, _FIRST_FATE.get(step.action, TagFate.NOT_WRITTEN), now)


def _carry_out(
    client: RegistryClient,
    request: ReleaseRequest,
    config: ReleaseConfig,
    manifest: FetchedManifest,
    old: Mapping[str, FetchedManifest | None],
    outcome: ReleaseOutcome,
    progress: BlobProgress | None,
) -> None:
    """Everything after the reads: refuse, copy, intent, tags, record, re-check."""
    target = request.target
    if _refused(request, outcome, {tag: digest_of(fetched) for tag, fetched in old.items()}):
        return
    if target != request.source.repository and not _copy(
        client, request, manifest, outcome, progress
    ):
        return
    if not outcome.writes and outcome.resumed is None:
        return  # every tag already at the digest: nothing to record
    if outcome.resumed is None:
        if not _store_intent(client, target, config, manifest, outcome):
            return
        if not _uncontested(client, target, config, outcome):
            _settle_intent(client, target, config, outcome)
            return
    if not _write_all(client, target, outcome.writes, manifest, outcome, config.consistency_window):
        _undo(client, target, outcome.writes, old, manifest, outcome)
        _if_gone(client, request, target, manifest, outcome)
        _settle_intent(client, target, config, outcome)
        return
    _store(client, target, config, manifest, outcome.writes, old, outcome)
    if outcome.record_state == "stored":
        _recheck(client, target, manifest, outcome)
    _settle_intent(client, target, config, outcome)
    if outcome.record_state == "stored":
        _close_superseded(client, target, config, outcome)


def _if_gone(
    client: RegistryClient,
    request: ReleaseRequest,
    repo: Repository,
    manifest: FetchedManifest,
    outcome: ReleaseOutcome,
) -> None:
    """A copy or tag write refused for a manifest or blob the registry lacks: read the
    candidate again in `repo` (the one the copy reads, or the one the tags point into), and
    if part of it is gone, that is why (`candidate.py`: exit 2). A read that fails leaves the
    failure as it was."""
    if outcome.cause is None or not refused_as_missing(outcome.cause):
        return
    with client.deadline.cleanup():
        try:
            part = missing_part(client, repo, manifest)
        except GpushipError:
            return
    if part:
        gone = gone_while_running(request.source, repo, part)
        outcome.fail(f"{gone}; {outcome.error}", gone)


_FIRST_FATE = {TagAction.UNCHANGED: TagFate.UNCHANGED, TagAction.CONFLICT: TagFate.REFUSED}


def _copy(
    client: RegistryClient,
    request: ReleaseRequest,
    manifest: FetchedManifest,
    outcome: ReleaseOutcome,
    progress: BlobProgress | None,
) -> bool:
    """Make the target repository hold the manifest tree (untagged), and what refers to the
    image (signatures, attestations, SBOMs: `release/referrers.py`); False if that failed."""
    try:
        outcome.copy = copy_manifest_tree(
            client,
            request.source.repository,
            request.target,
            manifest.digest,
            manifest.data,
            manifest.media_type,
            progress=progress,
        )
        outcome.referrers = copy_referrers(
            client,
            request.source.repository,
            request.target,
            manifest.digest,
            progress=progress,
            stats=outcome.copy,
        )
    except GpushipError as error:
        outcome.fail(
            f"copying content to {request.target} failed: {error}; no tag was written", error
        )
        _if_gone(client, request, request.source.repository, manifest, outcome)
        return False
    return True


def _record(
    request: ReleaseRequest,
    manifest: FetchedManifest,
    steps: list[TagStep],
    origin: Mapping[str, str | None],
    now: datetime,
    config_digest: str | None,
) -> ReleaseRecord:
    return ReleaseRecord(
        id=new_release_id(now),
        kind=request.kind,
        time=now,
        actor=origin["actor"],
        commit=origin["commit"],
        run_url=origin["run_url"],
        repository=str(request.target),
        source=str(request.source),
        digest=manifest.digest,
        media_type=manifest.media_type,
        tags=[TagChange.from_step(step) for step in steps],
        config_digest=config_digest,
        rollback_of=request.rollback_of,
    )


def _refused(
    request: ReleaseRequest, outcome: ReleaseOutcome, before: Mapping[str, str | None]
) -> bool:
    """Refuse before any write: immutable conflicts, or tags a rollback decided from moved."""
    if outcome.conflicts:
        names = ", ".join(f"{s.tag} (at {s.before})" for s in outcome.conflicts)
        outcome.error = f"immutable tags already point at another digest: {names}; nothing written"
        return True
    if request.refusal is not None:
        outcome.error = f"{request.refusal}; nothing written"
        return True
    moved = {tag: digest for tag, digest in request.expected.items() if before.get(tag) != digest}
    if moved:
        outcome.error = "; ".join(
            f"{tag} moved from {digest or 'nothing'} to {before.get(tag) or 'nothing'} while "
            f"this {request.kind} was prepared (another writer)"
            for tag, digest in moved.items()
        )
        outcome.error += "; nothing written, run it again to decide from the new state"
        return True
    return False


def _uncontested(
    client: RegistryClient, repo: Repository, config: ReleaseConfig, outcome: ReleaseOutcome
) -> bool:
    """True if no other release publishes this one's new immutable tags at another digest
    (`contention.py`: the intents arbitrate); else the release fails, nothing written."""
    try:
        contest = arbitrate(
            client,
            repo,
            config.history_tag,
            outcome.record,
            config.contention_wait,
            Trust.of(config.signatures),
        )
    except GpushipError as error:
        outcome.fail(
            f"reading the other releases under way failed: {error}; no tag was written", error
        )
        return False
    if contest.reason:
        outcome.fail(f"{contest.reason}; this release gives way, no tag was written")
        return False
    return True


def _write_all(
    client: RegistryClient,
    repo: Repository,
    writes: list[TagStep],
    manifest: FetchedManifest,
    outcome: ReleaseOutcome,
    window: float,
) -> bool:
    """Write each tag and read it back (within the consistency window: `consistency.py`);
    False (outcome failed) at the first that fails."""
    for step in writes:
        result = outcome.tags[step.tag]
        result.fate = TagFate.PENDING  # from the PUT on it may be written (a signal, no answer)
        try:
            client.put_manifest(repo.tag(step.tag), manifest.data, manifest.media_type)
        except GpushipError as error:
            # The PUT may have landed with its answer lost (a registry holding the tag
            # immutable, ECR, then refuses the retry): the read below tells.
            if not _holds(client, repo, step, window):
                outcome.fail(f"writing tag {step.tag} failed: {_explain(error)}", error)
                result.in_flight = isinstance(error, EnvironmentUnavailable)
                return False
        try:
            now = _read_back(client, repo, step, manifest, window)
        except GpushipError as error:
            outcome.fail(f"reading tag {step.tag} back after writing it failed: {error}", error)
            return False
        result.now = digest_of(now)
        if result.now == manifest.digest:
            result.fate = TagFate.WRITTEN
        elif result.now == step.before:
            # Not a lost write for sure: a registry lagging longer than the window reads the
            # same. The tag may yet show the digest, so the intent stays (a re-run completes).
            result.in_flight = True
            outcome.fail(
                f"tag {step.tag} still reads as {step.before or 'nothing'} {window:g} s after "
                "it was written: the write did not land, or the registry shows writes later "
                "than release.consistency-window"
            )
            return False
        elif step.kind is TagKind.IMMUTABLE:
            result.fate = TagFate.LEFT
            result.note = "another writer created it at the same time"
            outcome.fail(
                f"immutable tag {step.tag} reads back as {result.now or 'nothing'}, not "
                f"{manifest.digest}: another writer created it at the same time"
            )
            return False
        else:
            result.fate = TagFate.SUPERSEDED
            result.note = f"written, then moved to {result.now or 'nothing'} by another writer"
    return True


def _read_back(
    client: RegistryClient,
    repo: Repository,
    step: TagStep,
    manifest: FetchedManifest,
    window: float,
) -> FetchedManifest | None:
    """The tag just written, read back within the consistency window. Gone (404): a prune's
    DELETE of the digest (planned before this release) took effect after the write and took
    the tag with it, or a registry that lags shows no new tag yet; it is written once more
    at once either way (the same bytes; this run's intent, stored before, keeps prune from
    deleting it again), then read within the window, written again at each read that finds
    it gone: registry:2 takes a tag away in the second act of its DELETE, so a rewrite after
    a read-back that met the first act (the manifest gone, the tag still there) is taken too
    (`consistency.py`)."""
    found = read_tag(client, repo, step.tag)
    if digest_of(found) == step.after:
        return found

    def write_again() -> None:
        client.put_manifest(repo.tag(step.tag), manifest.data, manifest.media_type)

    if found is None:
        write_again()
    return read_after_write(
        client, repo, step.tag, old=step.before, window=window, write_again=write_again
    )


def _subject(manifest: FetchedManifest) -> dict[str, object]:
    """The released image, as the `subject` of its record."""
    return {"mediaType": manifest.media_type, "digest": manifest.digest, "size": len(manifest.data)}


def _store_intent(
    client: RegistryClient,
    repo: Repository,
    config: ReleaseConfig,
    manifest: FetchedManifest,
    outcome: ReleaseOutcome,
) -> bool:
    """Store the intent before any tag moves; False (outcome failed, nothing written) if not."""
    intent = outcome.record.as_state("intent")
    outcome.intent_sent = True
    try:
        outcome.intent_digest = store_record(
            client, repo, config.history_tag, intent, _subject(manifest), signer=outcome.signer
        )
        return True
    except RecordUncertain as error:
        outcome.fail(f"storing the release intent failed: {error}; no tag was written", error)
        outcome.record_state = "not stored"
        _drop_intent(client, repo, config, outcome)  # it may have landed, its answer lost
    except GpushipError as error:
        outcome.fail(f"storing the release intent failed: {error}; no tag was written", error)
        outcome.record_state = "not stored"
        outcome.intent_sent = False
    return False


def _store(
    client: RegistryClient,
    repo: Repository,
    config: ReleaseConfig,
    manifest: FetchedManifest,
    writes: list[TagStep],
    old: Mapping[str, FetchedManifest | None],
    outcome: ReleaseOutcome,
) -> None:
    """Store the record; if that fails, undo the tags (and a record that may have landed)."""
    outcome.record_state = "unknown"  # until the registry answers
    try:
        outcome.record_digest = store_record(
            client,
            repo,
            config.history_tag,
            outcome.record,
            _subject(manifest),
            config_present=outcome.intent_digest is not None,
            signer=outcome.signer,
        )
        outcome.record_state = "stored"
        return
    except RecordUncertain as error:
        outcome.fail(f"storing the release record failed: {error}", error)
    except GpushipError as error:
        outcome.fail(f"storing the release record failed: {error}", error)
        outcome.record_state = "not stored"
    _undo(client, repo, writes, old, manifest, outcome)
    if outcome.record_state == "unknown":
        _remove_record(client, repo, config, manifest, outcome)


def _remove_record(
    client: RegistryClient,
    repo: Repository,
    config: ReleaseConfig,
    manifest: FetchedManifest,
    outcome: ReleaseOutcome,
) -> None:
    """Remove the complete record a failed run may have stored (its answer lost)."""
    tag = tag_of(config.history_tag, outcome.record)
    digest = sha256_digest(record_manifest(outcome.record, _subject(manifest), outcome.signer))
    with client.deadline.cleanup():
        try:
            delete_record(client, repo, tag, digest)
            outcome.record_state = "removed"
        except GpushipError:
            outcome.error = f"{outcome.error}; the record tag {tag} may remain"


def _recheck(
    client: RegistryClient, repo: Repository, manifest: FetchedManifest, outcome: ReleaseOutcome
) -> None:
    """Read every tag written once more, now that the record is stored. A tag gone means a
    prune's DELETE of the digest took effect after the read-back (prune, once it sees this
    record, puts it back itself; this covers a DELETE that took effect before that): it is
    written again."""
    for tag, result in outcome.tags.items():
        if result.fate is not TagFate.WRITTEN:
            continue
        try:
            if client.head_manifest(repo.tag(tag)) is not None:
                continue
            client.put_manifest(repo.tag(tag), manifest.data, manifest.media_type)
        except GpushipError as error:
            outcome.warnings.append(
                f"tag {tag} could not be read again (or written back) after recording: {error}"
            )
            return
        result.note = "taken away by a concurrent prune's delete; written again"


def _close_superseded(
    client: RegistryClient, repo: Repository, config: ReleaseConfig, outcome: ReleaseOutcome
) -> None:
    """Close the unfinished releases this recorded release leaves nothing of
    (`intent.superseded`): history lists them as abandoned, prune no longer protects them."""
    later = [*outcome.later, outcome.record]
    mine = {tag: result.now for tag, result in outcome.tags.items() if result.known}
    for intent in outcome.unfinished:
        if intent.id == outcome.record.id or not mine.keys() & {c.tag for c in intent.tags}:
            continue
        try:
            others = [c.tag for c in intent.tags if c.tag not in mine]
            now = {tag: digest_of(read_tag(client, repo, tag)) for tag in others} | mine
            closing = superseded(intent, later, now, after=(outcome.record.id,))
            if closing and close_unfinished(
                client, repo, config.history_tag, intent, outcome.signer
            ):
                outcome.closed.append(intent.id)
        except GpushipError as error:
            outcome.warnings.append(
                f"unfinished release {intent.id} could not be closed as abandoned: {error}"
            )


def _settle_intent(
    client: RegistryClient, repo: Repository, config: ReleaseConfig, outcome: ReleaseOutcome
) -> None:
    """Remove the intent once the release is recorded, or once nothing this run wrote is
    left. It stays while a tag may hold what this run (or the interrupted run it resumed)
    wrote: history lists it as unfinished and the same command completes it."""
    if not outcome.intent_sent and outcome.resumed is None:
        return
    written = (TagFate.WRITTEN, TagFate.SUPERSEDED, TagFate.PENDING, TagFate.NOT_RESTORED)
    left = outcome.with_fate(*written, TagFate.UNKNOWN)
    left += [tag for tag, result in outcome.tags.items() if result.in_flight]
    if outcome.record_state != "stored" and (left or outcome.resumed is not None):
        if outcome.record_state != "unknown":
            outcome.record_state = "intent"
        return
    _drop_intent(client, repo, config, outcome)


def _drop_intent(
    client: RegistryClient, repo: Repository, config: ReleaseConfig, outcome: ReleaseOutcome
) -> None:
    """Remove the intent tag (read first when this run did not store it: the one a resumed
    run completes was stored by another); if that fails it stays, harmless once the record
    is stored. A release that is not recorded (undone, or it never wrote) is closed first by
    its abandoned record: registries that delete no manifests (GHCR through the registry API,
    ECR) keep the intent, and only that record tells it is over."""
    intent = outcome.record.as_state("intent")
    tag = tag_of(config.history_tag, intent)
    with client.deadline.cleanup():
        try:
            digest = outcome.intent_digest
            if digest is None:
                head = client.head_manifest(repo.tag(tag))
                digest = head.digest if head is not None else None
            if outcome.record_state != "stored" and digest is not None:
                subject = _subject(client.get_manifest(repo.at(intent.digest)))
                close_intent(
                    client, repo, config.history_tag, intent, subject, digest, outcome.signer
                )
            elif digest is not None:
                delete_record(client, repo, tag, digest)
            outcome.intent_sent, outcome.intent_digest = False, None
        except GpushipError as error:
            # Beside its record an intent is ignored: a registry that deletes no manifests
            # (GHCR through the registry API, ECR) keeps both, which is no reason to warn.
            if outcome.record_state != "stored":
                outcome.warnings.append(f"the intent tag {tag} could not be closed: {error}")
                outcome.record_state = "intent"


def _stopped(
    client: RegistryClient,
    repo: Repository,
    config: ReleaseConfig,
    manifest: FetchedManifest,
    old: Mapping[str, FetchedManifest | None],
    outcome: ReleaseOutcome,
    interrupt: KeyboardInterrupt,
) -> None:
    """A signal stopped the run: put back what it wrote, as after any failure, and say so.

    A signal that insists (the CLI raises the same signal again, or a third; not the SIGTERM
    GitHub Actions sends after its SIGINT) stops that too: what is not yet put back is
    reported, and the intent stays for the same command to complete."""
    name = interrupt_name(interrupt)
    if outcome.record_state == "stored":
        outcome.warnings.append(f"{name} arrived after the release was recorded; it is complete")
        return
    earlier = f" (while handling: {outcome.error})" if outcome.error else ""
    outcome.error = f"interrupted by {name}{earlier}"
    outcome.exit_code = interrupt_exit_code(interrupt)
    outcome.stopped_by = name
    for result in outcome.tags.values():
        result.in_flight = result.in_flight or result.fate is TagFate.PENDING
    if outcome.record_state == "none":
        outcome.record_state = "not stored"
    try:
        with client.deadline.cleanup():
            _undo(client, repo, outcome.writes, old, manifest, outcome)
            if outcome.record_state == "unknown":
                _remove_record(client, repo, config, manifest, outcome)
            _settle_intent(client, repo, config, outcome)
    except KeyboardInterrupt:
        _cut_short(outcome)


def _cut_short(outcome: ReleaseOutcome) -> None:
    """A repeated signal stopped the undo: say where each tag it had not reached may be."""
    outcome.error = f"{outcome.error}; a repeated signal stopped putting tags back"
    for result in outcome.tags.values():
        if result.fate is TagFate.WRITTEN:
            result.fate, result.note = TagFate.NOT_RESTORED, "the undo was stopped"
        elif result.fate is TagFate.PENDING:
            result.fate, result.known = TagFate.UNKNOWN, False
            result.note = "its write may have landed; the undo was stopped"
        elif result.fate is TagFate.SUPERSEDED:
            result.fate = TagFate.LEFT
    if outcome.record_state != "stored":
        outcome.record_state = "intent"


def _explain(error: GpushipError) -> str:
    """The error, saying so when the registry itself enforces immutability on the tag.

    ECR answers TAG_INVALID, Harbor 412, Docker Hub 403 for an immutable tag (reference §4).
    """
    if isinstance(error, RegistryRequestError) and (
        error.status == 412 or "TAG_INVALID" in error.codes or "immutable" in str(error).lower()
    ):
        return f"the registry holds this tag immutable ({error})"
    return str(error)


def _undo(
    client: RegistryClient,
    repo: Repository,
    writes: list[TagStep],
    old: Mapping[str, FetchedManifest | None],
    manifest: FetchedManifest,
    outcome: ReleaseOutcome,
) -> None:
    """Put back every tag this run wrote (or may have written), newest write first."""
    mine = (TagFate.WRITTEN, TagFate.SUPERSEDED, TagFate.PENDING)
    with client.deadline.cleanup():
        for step in reversed(writes):
            result = outcome.tags[step.tag]
            if result.fate in mine:
                _restore(client, repo, result, old.get(step.tag), manifest)


def _restore(
    client: RegistryClient,
    repo: Repository,
    result: TagResult,
    previous: FetchedManifest | None,
    manifest: FetchedManifest,
) -> None:
    """Put one tag back where it was, only if it still holds what this run wrote (read again
    right before), then read where it is."""
    step = result.step
    try:
        current = digest_of(read_tag(client, repo, step.tag))
    except GpushipError as error:
        result.fate, result.known = TagFate.UNKNOWN, False
        result.note = f"could not be read to put it back: {error}"
        return
    result.now, result.known = current, True
    if current == manifest.digest:
        result.in_flight = False  # it landed: nothing of it is left to land later
    if current == step.before:
        pending = result.fate is TagFate.PENDING
        result.fate = TagFate.NOT_WRITTEN if pending else TagFate.LEFT
        result.note = "its write did not land" if pending else "already back at its digest"
        if pending and result.in_flight:
            result.note += " (yet: it got no answer and may still, so the intent stays)"
        return
    if current != manifest.digest:
        result.fate = TagFate.LEFT
        result.note = f"another writer moved it to {current or 'nothing'} since; left alone"
        return
    try:
        if previous is None:
            remove_tag(client, repo, step.tag, fallback=manifest)
        else:
            client.put_manifest(repo.tag(step.tag), previous.data, previous.media_type)
        result.note = ""
    except GpushipError as error:
        result.note = f"putting it back failed: {error}"
    try:
        result.now = digest_of(read_tag(client, repo, step.tag))
    except GpushipError as error:
        result.fate, result.known = TagFate.UNKNOWN, False
        result.note = f"{result.note}; could not be read afterwards: {error}".lstrip("; ")
        return
    if result.now == step.before:
        result.fate = TagFate.RESTORED
    elif result.now == manifest.digest:
        result.fate = TagFate.NOT_RESTORED
    else:
        result.fate = TagFate.LEFT
        result.note = f"another writer moved it to {result.now or 'nothing'} meanwhile"


def _holds(client: RegistryClient, repo: Repository, step: TagStep, window: float) -> bool:
    """True if `step`'s tag reads as its new digest (a write whose answer was lost may show
    late: read within the consistency window); False if not, or if it cannot be read."""
    try:
        found = read_after_write(client, repo, step.tag, old=step.before, window=window)
    except GpushipError:
        return False
    return digest_of(found) == step.after


def remove_tag(
    client: RegistryClient,
    repo: Repository,
    tag: str,
    *,
    fallback: FetchedManifest | None = None,
) -> None:
    """Remove a tag without touching the manifest it points at.

    OCI tag DELETE where supported (registry:3, Docker Hub); otherwise (registry:2 answers 400
    or 405) regclient's method: point the tag at a unique empty manifest and delete that by
    digest (regclient `scheme/reg/tag.go` TagDelete). If that delete fails, the tag would be
    left on the empty manifest: `fallback` (what the tag held) is written back first.
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
    try:
        client.delete_manifest(repo.at(digest))
    except NotFound:
        return
    except GpushipError:
        if fallback is not None and digest_of(read_tag(client, repo, tag)) == digest:
            client.put_manifest(repo.tag(tag), fallback.data, fallback.media_type)
        raise
