"""The release stage's results: `gpuship promote` and `rollback` (one release), `history`
(the records kept in the registry) and `prune` (retention's decisions). Release records are
read from the registry, so they are the pydantic `ReleaseRecord`, dumped as stored."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from gpuship.release.plan import ContentStep
from gpuship.release.record import RecordState, ReleaseRecord
from gpuship.release.retention import TagDecision
from gpuship.report.result import omitted_if_none


@dataclass(frozen=True)
class CopyResult:
    """What copying the candidate into another repository (`promote --to`) did."""

    blobs: Mapping[str, int]  # exists | mounted | copied -> count
    manifests_written: int
    bytes_copied: int


@dataclass(frozen=True)
class ReferrerResult:
    """A signature, attestation or SBOM copied (or to copy) with the image."""

    digest: str
    media_type: str
    artifact_type: str | None
    tag: str | None  # the cosign tag it came by; null: found by its subject
    action: str


@dataclass(frozen=True)
class ReleasedTag:
    """One tag of a release: the planned write, and what the registry holds for it at the end."""

    tag: str
    kind: str  # immutable | floating
    before: str | None
    after: str
    action: str
    result: str  # written | unchanged | superseded | restored | NOT restored | unknown | ...
    now: str | None  # where it points at the end; null: no such tag, or unknown (`known`)
    known: bool  # false: the registry could not be read at the end
    note: str  # why, for anything but a plain write


@dataclass(frozen=True)
class ReleaseResult:
    """A promotion or rollback: its record, and what was written (or put back after a failure)."""

    record: ReleaseRecord
    stored: bool  # the record is in the registry's history
    record_state: RecordState
    record_digest: str | None
    tags: tuple[ReleasedTag, ...]
    written: tuple[str, ...]  # tags written (and still holding, or since moved by a later writer)
    restored: tuple[str, ...]  # tags put back after a failure
    unrestored: Mapping[str, str]  # tag -> where it points now, when it could not be put back
    error: str | None
    referrers: tuple[ReferrerResult, ...]
    copy: CopyResult | None = omitted_if_none()


@dataclass(frozen=True)
class PlannedTag:
    """One tag write a dry run found: where the tag points now and where it would."""

    tag: str
    kind: str  # immutable | floating
    before: str | None
    after: str
    action: str


@dataclass(frozen=True)
class DryRunResult:
    """`promote --dry-run` / `rollback --dry-run`: what the release would change; nothing did."""

    dry_run: Literal[True]
    kind: str  # promote | rollback
    repository: str
    source: str
    digest: str
    media_type: str
    tags: tuple[PlannedTag, ...]
    content: tuple[ContentStep, ...]  # blobs and manifests the copy would need
    referrers: tuple[ReferrerResult, ...]
    records_added: int


@dataclass(frozen=True)
class HistoryResult:
    """The releases recorded for a repository (or one tag), newest first."""

    repository: str
    tag: str | None
    current_digest: str | None  # where `tag` points now
    current_release: str | None  # the recorded release that put it there; None: none did
    records: tuple[ReleaseRecord, ...]
    # Digests these records name (released, or a floating tag moved from) that the repository
    # no longer holds: a rollback to one is refused.
    gone: tuple[str, ...]


@dataclass(frozen=True)
class PruneResult:
    """The digests retention selected, and (with --apply) what was deleted."""

    repository: str
    dry_run: bool
    selected: tuple[str, ...]
    deleted: tuple[str, ...]
    skipped: Mapping[str, str]  # digest -> why it was not deleted after all
    failed: Mapping[str, str]  # digest -> why deleting it failed (it is still there)
    unknown: Mapping[str, str]  # digest -> why whether it is gone is unknown
    restored: Mapping[str, str]  # digest -> deleted, then put back: the release that claimed it
    # digest -> the floating tag and release it is a rollback target of (never deleted)
    rollback_targets: Mapping[str, str]
    tags: tuple[TagDecision, ...]
