"""Which unfinished release a run completes, on data.

A release stores its intent before it moves any tag (`release/history.py`). A run that was
stopped (a signal, the registry gone, the process killed) leaves that intent without a
complete record. Running the same command again completes it: same kind, digest and tags in
the repository that holds the intent, and every tag still where the stopped run found it or
where it put it. The record stored then is the intent's own (its before digests are what the
tags really held), so `history` and `rollback` work from it; a tag another writer has moved
since makes it a new release instead, and the stopped one stays listed as unfinished.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

from gpuship.release.policy import TagStep
from gpuship.release.record import ReleaseRecord


def resumable(
    unfinished: Sequence[ReleaseRecord],
    kind: Literal["promote", "rollback"],
    digest: str,
    before: Mapping[str, str | None],
) -> ReleaseRecord | None:
    """The newest unfinished release of the repository (whose history `unfinished` was read
    from, whatever host name it was reached by) that this run repeats (`before`: every
    requested tag and its digest now), or None."""
    for record in reversed(unfinished):
        same = (record.kind, record.digest) == (kind, digest)
        if not same or {change.tag for change in record.tags} != set(before):
            continue
        if all(before[change.tag] in (change.before, change.after) for change in record.tags):
            return record
    return None


def steps_of(record: ReleaseRecord) -> list[TagStep]:
    """The tag steps a record planned, in its order."""
    return [
        TagStep(change.tag, change.kind, change.before, change.after, change.action)
        for change in record.tags
    ]


def unfinished_rollback(
    unfinished: Sequence[ReleaseRecord], tag: str, current: str | None
) -> ReleaseRecord | None:
    """The newest unfinished rollback that moved `tag` to `current` (its write landed): running
    `rollback` again completes it rather than rolling back further."""
    for record in reversed(unfinished):
        if record.kind != "rollback":
            continue
        if any(change.tag == tag and change.after == current for change in record.tags):
            return record
    return None
