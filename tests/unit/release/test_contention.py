"""Which release publishes a contested immutable tag, on data (`release/contention.py`)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from gpuship.release.contention import contested, earlier, rivals
from gpuship.release.policy import TagAction, TagKind
from gpuship.release.record import ReleaseRecord, TagChange

A, B, C = ("sha256:" + c * 64 for c in "abc")
WHEN = datetime(2026, 11, 29, 17, 0, tzinfo=timezone.utc)


def _release(release_id: str, digest: str, *changes: TagChange, when: datetime = WHEN):
    return ReleaseRecord(
        id=release_id,
        kind="promote",
        time=when,
        repository="r.io/app",
        source=f"r.io/app@{digest}",
        digest=digest,
        media_type="application/vnd.oci.image.manifest.v1+json",
        tags=list(changes),
        state="intent",
    )


def _version(tag: str, digest: str, action: TagAction = TagAction.CREATE) -> TagChange:
    before = None if action is TagAction.CREATE else digest
    return TagChange(tag=tag, kind=TagKind.IMMUTABLE, before=before, after=digest, action=action)


def _floating(tag: str, before: str, after: str) -> TagChange:
    return TagChange(
        tag=tag, kind=TagKind.FLOATING, before=before, after=after, action=TagAction.MOVE
    )


def test_only_new_immutable_tags_are_contested():
    mine = _release("20261129T170000Z-aaaaaa", A, _version("1.1.0", A), _floating("stable", C, A))
    assert contested(mine) == {"1.1.0"}
    found = _release("20261129T170000Z-aaaaab", A, _version("1.0.0", A, TagAction.UNCHANGED))
    assert contested(found) == set()


def test_a_rival_creates_a_contested_tag_at_another_digest():
    mine = _release("20261129T170000Z-aaaaaa", A, _version("1.1.0", A), _floating("stable", C, A))
    other = _release("20261129T170001Z-bbbbbb", B, _version("1.1.0", B))
    same_digest = _release("20261129T170002Z-cccccc", A, _version("1.1.0", A))
    other_tag = _release("20261129T170003Z-dddddd", B, _version("1.2.0", B))
    floating_only = _release("20261129T170004Z-eeeeee", B, _floating("stable", C, B))
    refused = _release("20261129T170005Z-ffffff", B, _version("1.1.0", B, TagAction.CONFLICT))
    unfinished = [mine, other, same_digest, other_tag, floating_only, refused]
    assert [r.id for r in rivals(mine, unfinished)] == [other.id]


def test_the_order_is_time_then_id_whatever_the_reader():
    first = _release("20261129T170000Z-ffffff", A, _version("1.1.0", A))
    tie = _release("20261129T170000Z-000000", B, _version("1.1.0", B))
    later = _release("20261129T165959Z-000000", C, _version("1.1.0", C), when=WHEN + timedelta(1))
    assert earlier(tie, first) and not earlier(first, tie)
    assert earlier(first, later) and not earlier(later, first)
