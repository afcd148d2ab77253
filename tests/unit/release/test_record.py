"""Release records, rollback targets and rendered instructions, on data."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from gpuship.errors import InputError
from gpuship.release.policy import TagAction, TagKind
from gpuship.release.record import (
    ReleaseRecord,
    TagChange,
    new_release_id,
    provenance,
    render_instructions,
)
from gpuship.release.rollback import previous_digest

A, B, C = ("sha256:" + c * 64 for c in "abc")
WHEN = datetime(2026, 11, 29, 17, 0, tzinfo=timezone.utc)


def _record(release_id: str, changes: list[TagChange], digest: str) -> ReleaseRecord:
    return ReleaseRecord(
        id=release_id,
        kind="promote",
        time=WHEN,
        repository="r.io/app",
        source=f"r.io/c@{digest}",
        digest=digest,
        media_type="application/vnd.oci.image.index.v1+json",
        tags=changes,
    )


def _move(tag: str, before: str | None, after: str) -> TagChange:
    action = TagAction.MOVE if before else TagAction.CREATE
    return TagChange(tag=tag, kind=TagKind.FLOATING, before=before, after=after, action=action)


def test_previous_digest_follows_the_newest_move_to_current():
    records = [
        _record("r1", [_move("stable", None, A)], A),
        _record("r2", [_move("stable", A, B)], B),
        _record("r3", [_move("stable", B, C), _move("prod", None, C)], C),
    ]
    assert previous_digest(records, "stable", C) == (B, "r3")
    assert previous_digest(records, "stable", B) == (A, "r2")
    with pytest.raises(InputError, match="no recorded move"):
        previous_digest(records, "stable", A)  # first creation has no previous digest
    with pytest.raises(InputError):
        previous_digest(records, "prod", C)


def test_record_json_round_trip_and_provenance():
    env = {
        "GITHUB_ACTOR": "octo",
        "GITHUB_SHA": "f00",
        "GITHUB_REPOSITORY": "o/r",
        "GITHUB_RUN_ID": "9",
        "GITHUB_RUN_ATTEMPT": "2",
        "GITHUB_SERVER_URL": "https://ghe.example",
    }
    origin = provenance(env)
    assert origin == {
        "actor": "octo",
        "commit": "f00",
        "run_url": "https://ghe.example/o/r/actions/runs/9/attempts/2",
    }
    assert provenance({})["run_url"] is None
    record = _record("r1", [_move("stable", A, B)], B)
    assert ReleaseRecord.model_validate_json(record.to_json()) == record
    assert b'"schema":"gpuship.release/v1"' in record.to_json()
    first, second = new_release_id(WHEN), new_release_id(WHEN)
    assert first.startswith("20261129T170000Z-")
    assert first != second


def test_instructions_name_every_moved_tag_with_all_tools():
    record = _record(
        "r9",
        [
            _move("stable", A, B),
            _move("edge", None, B),
            TagChange(
                tag="1.0.0", kind=TagKind.IMMUTABLE, before=None, after=B, action=TagAction.CREATE
            ),
        ],
        B,
    )
    text = render_instructions(record)
    assert "gpuship rollback r.io/app:stable" in text
    assert f"crane tag r.io/app@{A} stable" in text
    assert (
        f"skopeo copy --all --preserve-digests docker://r.io/app@{A} docker://r.io/app:stable"
        in (text)
    )
    assert "imagetools create --prefer-index=false --tag r.io/app:stable" in text
    assert "`edge`" in text
    assert "`1.0.0`" in text
    assert "gpuship rollback r.io/app:edge" not in text
