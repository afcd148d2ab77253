"""Rollback targets on data: the digests a recorded rollback can return a floating tag to.

`rollback REPO:TAG` goes to the digest the tag had before the newest recorded move to where it
is now (`rollback.previous_digest`), and `rollback --to RELEASE` to that release's digest. So
a release that moved or created a floating tag makes two digests reachable: the one it moved
the tag from, and its own. Retention keeps them for each floating tag's newest
`release.retention.keep-releases` releases (a rollback is a release too), and for every
unfinished release however old (a rollback can undo what an interrupted release moved).
Older targets, `--to` a digest no release recorded, and releases that moved no floating tag
are not kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from gpuship.release.policy import TagAction, TagKind
from gpuship.release.record import ReleaseRecord


@dataclass(frozen=True)
class RollbackTarget:
    """A digest a rollback of `tag` can return to because of release `release`: the digest it
    moved the tag from (`moved_from`), or the one it put there."""

    digest: str
    tag: str
    release: str
    moved_from: bool

    @property
    def reason(self) -> str:
        """Why the digest is kept, naming the tag and the release."""
        which = f"{self.tag} was here before it" if self.moved_from else "its digest"
        return f"rollback target of {self.tag}, release {self.release} ({which})"


def release_targets(record: ReleaseRecord) -> list[RollbackTarget]:
    """The rollback targets `record` makes: for each floating tag it moved or created, the
    digest before (a move) and the release's digest."""
    found: list[RollbackTarget] = []
    for change in record.tags:
        if change.kind is not TagKind.FLOATING:
            continue
        if change.action is TagAction.MOVE and change.before is not None:
            found.append(RollbackTarget(change.before, change.tag, record.id, True))
        if change.action in (TagAction.MOVE, TagAction.CREATE):
            found.append(RollbackTarget(change.after, change.tag, record.id, False))
    return found


def rollback_targets(
    entries: Sequence[ReleaseRecord],
    keep_releases: int,
    unfinished: Iterable[ReleaseRecord] = (),
) -> dict[str, str]:
    """Digest -> why, for the targets of each floating tag's newest `keep_releases` releases
    in `entries` (complete and unfinished releases, oldest first, as `History.entries`), and
    of every release in `unfinished`. A digest several releases name gets the newest reason."""
    counted: dict[str, int] = {}
    targets: dict[str, str] = {}
    for record in reversed(entries):
        found = release_targets(record)
        for target in found:
            if counted.get(target.tag, 0) < keep_releases:
                targets.setdefault(target.digest, target.reason)
        for tag in {target.tag for target in found}:
            counted[tag] = counted.get(tag, 0) + 1
    for record in unfinished:
        for target in release_targets(record):
            targets.setdefault(target.digest, target.reason)
    return targets
