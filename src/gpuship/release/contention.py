"""Which of two releases publishes an immutable tag both create at different digests.

Registries have no compare-and-swap, so the intents arbitrate (DESIGN.md, many writers at
once). Each release stores its intent before any tag moves, then reads the repository's
unfinished releases: of two releases that each store and then read, at least one sees the
other's intent. A rival is an unfinished release (not this one) whose intent creates one of
this release's new immutable tags at another digest. Releases are ordered by (time, id), the
order every run reads alike whatever it saw:

- a rival earlier in that order wins: this release writes nothing, closes its intent and fails;
- a rival later in that order loses if it saw this intent, and closes its intent; if it did
  not see it, it is already writing. So this release waits for each later rival's word (its
  record tag), up to `release.contention-wait` seconds: an abandoned record (or its intent
  gone without one) lets it go on; a complete record, or no word in time, and it fails
  having written nothing.

Besides, the contested tags are read again once the intent is stored: a rival that finished
before this release read the intents shows there (its intent already removed).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from gpuship.reference import Repository
from gpuship.registry.client import RegistryClient
from gpuship.release.consistency import digest_of, read_tag
from gpuship.release.history import (
    closed_tag,
    intent_tag,
    read_history_tag,
    record_tag,
    unfinished_releases,
)
from gpuship.release.policy import TagAction, TagKind
from gpuship.release.record import ReleaseRecord
from gpuship.release.trust import Trust

_FIRST_PAUSE_S = 0.1
_MAX_PAUSE_S = 1.0


@dataclass(frozen=True)
class Contest:
    """The tags this release may not publish and why ("" when it may go on)."""

    reason: str = ""
    winner: str | None = None  # the release id that publishes them, where known


def contested(record: ReleaseRecord) -> set[str]:
    """The immutable tags `record` creates: the only ones two releases can fight over."""
    return {
        change.tag
        for change in record.tags
        if change.kind is TagKind.IMMUTABLE and change.action is TagAction.CREATE
    }


def rivals(mine: ReleaseRecord, unfinished: Sequence[ReleaseRecord]) -> list[ReleaseRecord]:
    """The unfinished releases that create one of `mine`'s contested tags at another digest."""
    tags = contested(mine)
    return [
        other
        for other in unfinished
        if other.id != mine.id
        and any(
            c.tag in tags and c.after != mine.digest and c.action is not TagAction.CONFLICT
            for c in other.tags
        )
    ]


def earlier(record: ReleaseRecord, than: ReleaseRecord) -> bool:
    """`record` comes first in the order every run reads alike."""
    return (record.time, record.id) < (than.time, than.id)


def arbitrate(
    client: RegistryClient,
    repo: Repository,
    prefix: str,
    mine: ReleaseRecord,
    wait_s: float,
    trust: Trust,
) -> Contest:
    """Decide, once this release's intent is stored, whether it may write its tags (an intent
    never to follow, `trust.doubt`, is no rival)."""
    tags = contested(mine)
    if not tags:
        return Contest()
    for tag in sorted(tags):
        found = digest_of(read_tag(client, repo, tag))
        if found is not None and found != mine.digest:
            return Contest(f"immutable tag {tag} was created at {found} meanwhile")
    unfinished = unfinished_releases(client, repo, prefix, client.list_tags(repo), trust)
    found_rivals = sorted(rivals(mine, unfinished), key=lambda r: (r.time, r.id))
    for rival in found_rivals:
        if earlier(rival, mine):
            return Contest(_lost(rival, mine, "started first"), rival.id)
    for rival in found_rivals:
        word = _await(client, repo, prefix, rival, wait_s)
        if word == "complete":
            return Contest(_lost(rival, mine, "published them first"), rival.id)
        if word is None:
            return Contest(
                f"{_names(rival, mine)} at {rival.digest} by release {rival.id}, which has not "
                f"finished in {wait_s:g} s (under way, or interrupted: the same command run "
                "again completes it)",
                rival.id,
            )
    return Contest()


def _await(
    client: RegistryClient, repo: Repository, prefix: str, rival: ReleaseRecord, wait_s: float
) -> str | None:
    """The rival's word: "complete", "abandoned" (its closing record, or its intent gone
    without a record), or None when it has said nothing within `wait_s` (and the command's
    deadline). Its complete record is read first: it outranks a closing one."""
    end = time.monotonic() + max(0.0, min(wait_s, client.deadline.remaining()))
    pause = _FIRST_PAUSE_S
    while True:
        for tag in (record_tag(prefix, rival.id), closed_tag(prefix, rival.id)):
            found = read_history_tag(client, repo, prefix, tag)
            if found is not None:
                return found.record.state
        if client.head_manifest(repo.tag(intent_tag(prefix, rival.id))) is None:
            return "abandoned"
        left = end - time.monotonic()
        if left <= 0:
            return None
        time.sleep(min(pause, left))
        pause = min(pause * 2, _MAX_PAUSE_S)


def _names(rival: ReleaseRecord, mine: ReleaseRecord) -> str:
    tags = sorted(contested(mine) & {c.tag for c in rival.tags})
    return f"immutable tag{'s' if len(tags) > 1 else ''} {', '.join(tags)} claimed"


def _lost(rival: ReleaseRecord, mine: ReleaseRecord, how: str) -> str:
    return f"{_names(rival, mine)} at {rival.digest} by release {rival.id}, which {how}"
