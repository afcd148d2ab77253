"""Which unfinished release a run completes, on data.

A release stores its intent before it moves any tag (`release/history.py`). A run that was
stopped (a signal, the registry gone, the process killed) leaves that intent without a
complete record. Running the same command again completes it: same kind, digest and tags in
the repository that holds the intent, and every tag still where the stopped run found it or
where it put it, and no release recorded since it started has touched any of its tags. The
record stored then is the intent's own (its before digests are what the tags really held), so
`history` and `rollback` work from it; a tag another writer has moved since, or a later
release of one of its tags (its record would sort before that release, and its time, actor and
run would be the stopped run's), makes it a new release instead.

An intent is closed (`superseded`) once a later complete record took over its tags and each
tag no later record took over no longer holds what it wrote: history lists it as abandoned,
prune stops protecting its digest, and it is never completed. A release still running between
its intent and its first write looks the same (no registry tells a live run from a dead one):
if a later release of its tags closes it meanwhile, it still stores its complete record, under
its record tag, never the closing record's (`history.closed_tag`), in whichever order the two
land; the complete record outranks the closing one wherever both are read.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Literal

from gpuship.release.policy import TagAction, TagStep
from gpuship.release.record import ReleaseRecord


def resumable(
    unfinished: Sequence[ReleaseRecord],
    later: Sequence[ReleaseRecord],
    kind: Literal["promote", "rollback"],
    digest: str,
    before: Mapping[str, str | None],
) -> ReleaseRecord | None:
    """The newest unfinished release of the repository (whose history `unfinished` was read
    from, whatever host name it was reached by) that this run repeats (`before`: every
    requested tag and its digest now), or None. `later`: complete records stored since the
    oldest of them started; one that touched a tag of an intent rules that intent out."""
    for record in reversed(unfinished):
        same = (record.kind, record.digest) == (kind, digest)
        if not same or {change.tag for change in record.tags} != set(before):
            continue
        if _taken_over(record, later):
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


def superseded(
    intent: ReleaseRecord,
    later: Sequence[ReleaseRecord],
    now: Mapping[str, str | None],
    *,
    after: Collection[str] = (),
) -> bool:
    """True when nothing of `intent` is left: a complete record newer than it touched one of
    its tags, and each tag it writes is either taken over by such a record or no longer at
    its digest (`now`: the digest of each tag not taken over; a tag missing counts as
    unknown, so left). `after`: ids of records known to come after it whatever the clocks
    say (the run that read the intent as unfinished before storing its own record: a runner
    whose clock ran fast gave the intent a later time)."""
    taken = _taken_over(intent, later, after)
    if not taken:
        return False
    for change in intent.tags:
        if change.tag in taken or change.before == change.after:
            continue
        if change.tag not in now or now[change.tag] == change.after:
            return False
    return True


def _taken_over(
    intent: ReleaseRecord, later: Sequence[ReleaseRecord], after: Collection[str] = ()
) -> set[str]:
    """The tags of `intent` that a complete record newer than it (or in `after`) wrote, or
    found in place."""
    mine = {change.tag for change in intent.tags}
    return {
        change.tag
        for record in later
        if record.state == "complete"
        and record.id != intent.id
        and (record.id in after or _newer(record, intent))
        for change in record.tags
        if change.tag in mine and change.action is not TagAction.CONFLICT
    }


def _newer(record: ReleaseRecord, than: ReleaseRecord) -> bool:
    """`record` started after `than` (ids break a tie: two releases of the same instant)."""
    return (record.time, record.id) > (than.time, than.id)
