"""What prune's claims keep of the history tags it reads, on data (`release/claims.py`)."""

from __future__ import annotations

from datetime import datetime, timezone
from itertools import permutations

from gpuship.reference import Repository
from gpuship.release.claims import Claims
from gpuship.release.policy import TagAction, TagKind
from gpuship.release.record import ReleaseRecord, TagChange

A, B = ("sha256:" + c * 64 for c in "ab")
WHEN = datetime(2026, 11, 29, 17, 0, tzinfo=timezone.utc)


def _intent() -> ReleaseRecord:
    change = TagChange(
        tag="stable", kind=TagKind.FLOATING, before=A, after=B, action=TagAction.MOVE
    )
    return ReleaseRecord(
        id="20261129T170000Z-a1b2c3",
        kind="promote",
        time=WHEN,
        repository="r.io/app",
        source=f"r.io/app@{B}",
        digest=B,
        media_type="application/vnd.oci.image.manifest.v1+json",
        tags=[change],
        state="intent",
    )


def _claims() -> Claims:
    # No registry is reached: only what was learnt from records read is asked.
    return Claims(client=None, repo=Repository("r.io", "app"), prefix="p", reader=None)  # type: ignore[arg-type]


def test_a_complete_record_outranks_a_closing_one_read_in_any_order():
    """A release closed while it still ran completed all the same: its digest and its
    rollback target stay claimed whichever of its history tags is read last."""
    intent = _intent()
    states = [intent, intent.as_state("abandoned"), intent.as_state("complete")]
    for order in permutations(states):
        claims = _claims()
        for record in order:
            claims._learn(record)
        assert claims.releases[intent.id].state == "complete", [r.state for r in order]
        assert set(claims._released()) == {A, B}


def test_a_closing_record_outranks_the_intent():
    intent = _intent()
    for order in permutations([intent, intent.as_state("abandoned")]):
        claims = _claims()
        for record in order:
            claims._learn(record)
        assert claims.releases[intent.id].state == "abandoned"
        assert claims._released() == {}
