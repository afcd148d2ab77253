"""Which release records may be followed, on data.

Anyone who can push a tag to the repository can plant a record or an intent (a build token
allowed to push `sha-*` tags can push `gpuship.releases.*` too). A record is followed (rollback
goes back from it, a re-run completes it, `history` explains a tag by it) only if:

- it is consistent in itself: each tag it writes goes to the release's own digest, and each
  action says what its before and after digests say (`inconsistent`);
- where `release.signatures` lists keys, it is signed by one of them, or unsigned while
  signatures are not `required` (`unsigned`);
- the move rollback would go back from joins the chain of records of its tag: the digest it
  says the tag held before is one another record left the tag at or the oldest record of the
  tag found it at (`chain_break`). A record that says `stable` came from an image no other
  record ever put there is a move outside gpuship or a forgery, and rollback does not follow
  it. A forger who plants records that do join up, or who plants a tag's oldest record, is
  stopped by required signatures only.

Anything else is reported (`history` lists it with a finding) and never followed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gpuship.release.config import SignaturesConfig
from gpuship.release.policy import TagAction
from gpuship.release.record import ReleaseRecord


@dataclass(frozen=True)
class Trust:
    """The keys records are checked against, and whether a signature is required."""

    keys: tuple[str, ...] = ()
    required: bool = False

    @classmethod
    def of(cls, config: SignaturesConfig) -> Trust:
        """The trust `release.signatures` sets."""
        return cls(tuple(config.public_keys), config.required)


def inconsistent(record: ReleaseRecord) -> str | None:
    """Why `record` contradicts itself (a tag sent elsewhere than the release's digest, an
    action its digests deny), or None."""
    for change in record.tags:
        if change.action is TagAction.CONFLICT:
            continue
        if change.after != record.digest:
            return (
                f"its tag {change.tag} goes to {change.after}, not to the release's digest "
                f"{record.digest}"
            )
        if change.before == change.after:
            expected = TagAction.UNCHANGED
        else:
            expected = TagAction.CREATE if change.before is None else TagAction.MOVE
        if change.action is not expected:
            return (
                f"its tag {change.tag} is marked {change.action.value} from "
                f"{change.before or 'nothing'} to {change.after}"
            )
    return None


def unsigned(signed: bool | None, trust: Trust) -> str | None:
    """Why a record whose signature check gave `signed` (`signing.verified`) is not trusted."""
    if trust.keys and signed is False:
        return "its signature is by none of release.signatures.public-keys"
    if trust.required and not signed:
        return "it is not signed, and release.signatures.required is set"
    return None


def doubt(record: ReleaseRecord, signed: bool | None, trust: Trust) -> str | None:
    """Why `record` is never followed (in itself, or by its signature), or None."""
    return inconsistent(record) or unsigned(signed, trust)


def chain_break(records: Sequence[ReleaseRecord], record: ReleaseRecord, tag: str) -> str | None:
    """Why `record`'s move of `tag` does not join the chain of `records` (oldest first), or
    None. The chain shows the tag held each digest a record left it at, and the one the
    oldest record of the tag found it at; a move from any of them joins (two releases that
    ran at once both moved it from the digest they read)."""
    mine = next((c for c in record.tags if c.tag == tag), None)
    if mine is None or mine.action is not TagAction.MOVE:
        return None
    changes = [
        (other, change)
        for other in records
        for change in other.tags
        if change.tag == tag and change.action is not TagAction.CONFLICT
    ]
    oldest = min(changes, key=lambda found: (found[0].time, found[0].id))
    held = {change.after for _, change in changes} | {oldest[1].before}
    if oldest[0].id == record.id or mine.before in held:
        return None
    older = [(o, c) for o, c in changes if (o.time, o.id) < (record.time, record.id)]
    last, change = older[-1]
    return (
        f"release {record.id} says {tag} was at {mine.before} before it, but no other record "
        f"shows {tag} there (release {last.id} left it at {change.after}): a move outside "
        "gpuship, or a forged record"
    )


def chain_breaks(records: Sequence[ReleaseRecord]) -> list[tuple[ReleaseRecord, str]]:
    """Every record of `records` (oldest first) with a move that does not join its chain."""
    found = []
    for record in records:
        for change in record.tags:
            reason = chain_break(records, record, change.tag)
            if reason is not None:
                found.append((record, reason))
                break
    return found
