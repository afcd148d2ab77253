"""`gpuship audit --publish`: keep this runner's entry of the fleet inventory fresh.

`--if-older-than` reads the runner's entry first (one manifest GET) and skips the NVML
reading and the upload when the entry is newer: the runner's job-started hook can call it
before every job at the cost of one request.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

from gpuship.compat.audit import HostAudit, RunnerIdentity
from gpuship.config.duration import format_duration
from gpuship.registry.access import RegistryAccess
from gpuship.registry.reference import parse_repository
from gpuship.route.inventory import InventoryEntry, entry_tag, publish_audit, read_entry


@dataclass(frozen=True)
class PublishOutcome:
    """What happened: published (with the audit) or skipped (with the fresh entry)."""

    repository: str
    tag: str
    audit: HostAudit | None
    skipped_because: str | None
    previous: InventoryEntry | None


def publish_or_skip(
    fleet: str,
    runner: RunnerIdentity,
    take_audit: Callable[[], HostAudit],
    *,
    if_older_than: timedelta | None,
    now: datetime,
    access: RegistryAccess,
) -> PublishOutcome:
    """Publish a fresh audit as `runner`'s entry unless the entry is newer than `if_older_than`."""
    repo = parse_repository(fleet)
    tag = entry_tag(runner)
    with access.client() as client:
        previous = read_entry(client, repo, tag)
        if previous is not None and if_older_than is not None:
            age = now - previous.taken_at
            if age < if_older_than:
                reason = (
                    f"entry is {format_duration(max(age, timedelta(0)))} old, "
                    f"newer than {format_duration(if_older_than)}"
                )
                return PublishOutcome(str(repo), tag, None, reason, previous)
        audit = take_audit()
        publish_audit(client, repo, audit, previous)
    return PublishOutcome(str(repo), tag, audit, None, previous)
