"""Release records, record tags, what explains a tag's digest, where rollback goes (or what
disagrees), rendered instructions, and the report a release outcome becomes, on data."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from gpuship.errors import EXIT_ENVIRONMENT, EXIT_FAILED, InputError
from gpuship.release.history import explain, record_id_of, record_tag
from gpuship.release.policy import TagAction, TagKind, TagStep
from gpuship.release.promote import ReleaseOutcome, TagFate, TagResult
from gpuship.release.record import (
    ReleaseRecord,
    TagChange,
    new_release_id,
    provenance,
    render_instructions,
)
from gpuship.release.report import release_report
from gpuship.release.result import ReleaseResult
from gpuship.release.rollback import previous_digest, rollback_target
from gpuship.report.model import Severity

A, B, C, D = ("sha256:" + c * 64 for c in "abcd")
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


HISTORY = [
    _record("20261129T170001Z-000001", [_move("stable", None, A)], A),
    _record("20261129T170002Z-000002", [_move("stable", A, B)], B),
]


def test_record_tags_name_one_release_each():
    tag = record_tag("gpuship.releases", "20261129T170001Z-a1b2c3")
    assert tag == "gpuship.releases.20261129T170001Z-a1b2c3"
    assert record_id_of("gpuship.releases", tag) == "20261129T170001Z-a1b2c3"
    assert record_id_of("gpuship.releases", "gpuship.releases") is None
    assert record_id_of("gpuship.releases", "gpuship.releases.latest") is None
    assert record_id_of("other", tag) is None


def test_explain_finds_the_newest_record_that_left_a_tag_at_a_digest():
    assert explain(HISTORY, "stable", B) is HISTORY[1]
    assert explain(HISTORY, "stable", A) is HISTORY[0]
    assert explain(HISTORY, "stable", C) is None
    assert explain(HISTORY, "prod", A) is None


def test_rollback_target_by_digest_release_or_history():
    assert rollback_target(HISTORY, "stable", B, None) == (A, HISTORY[1].id)
    assert rollback_target(HISTORY, "stable", B, C) == (C, None)
    assert rollback_target(HISTORY, "stable", B, HISTORY[0].id) == (A, HISTORY[0].id)
    with pytest.raises(InputError, match="does not exist"):
        rollback_target(HISTORY, "stable", None, None)


def test_rollback_says_exactly_what_disagrees():
    # A release is still running (its tag written, its record not yet), or someone used crane.
    with pytest.raises(InputError) as raised:
        rollback_target(HISTORY, "stable", C, None)
    message = str(raised.value)
    assert f"its current digest {C}" in message
    assert f"release {HISTORY[1].id}" in message and f"put it at {B}" in message
    assert "--to DIGEST" in message
    with pytest.raises(InputError, match="left it there without a previous digest"):
        rollback_target(HISTORY, "stable", A, None)
    with pytest.raises(InputError, match="no recorded move of tag 'prod'"):
        rollback_target(HISTORY, "prod", A, None)


def _outcome(*results: tuple[str, str | None, TagFate, str | None, bool]) -> ReleaseOutcome:
    steps, tags = [], {}
    for tag, before, fate, now, known in results:
        action = TagAction.MOVE if before else TagAction.CREATE
        step = TagStep(tag, TagKind.FLOATING, before, C, action)
        steps.append(step)
        tags[tag] = TagResult(step, fate, now, known)
    record = _record("20261129T170003Z-000003", [TagChange.from_step(s) for s in steps], C)
    return ReleaseOutcome(steps=steps, record=record, tags=tags)


def test_success_with_a_tag_moved_since_is_exit_0_and_says_where_it_is():
    outcome = _outcome(
        ("stable", A, TagFate.SUPERSEDED, D, True), ("edge", None, TagFate.WRITTEN, C, True)
    )
    outcome.tags["stable"].note = f"written, then moved to {D} by another writer"
    outcome.record_state, outcome.record_digest = "stored", B
    report = release_report("promote", outcome, None, None)
    assert report.exit_code(Severity.ERROR) == 0
    assert [f.rule for f in report.findings] == ["GSR104"]
    assert D in report.findings[0].message
    assert "since moved by another writer: stable" in report.headline
    assert report.outputs["release-id"] == outcome.record.id


def test_failure_report_says_what_the_registry_holds_and_exits_3_for_an_outage():
    outcome = _outcome(
        ("stable", A, TagFate.RESTORED, A, True),
        ("canary", None, TagFate.UNKNOWN, None, False),
        ("edge", B, TagFate.LEFT, D, True),
    )
    outcome.tags["edge"].note = f"another writer moved it to {D} since; left alone"
    outcome.fail("storing the release record failed: registry gone")
    outcome.exit_code = EXIT_ENVIRONMENT
    outcome.record_state = "unknown"
    report = release_report("promote", outcome, None, None)
    assert report.exit_code(Severity.ERROR) == EXIT_ENVIRONMENT
    failed = next(f for f in report.findings if f.rule == "GSR102")
    assert "Registry now: stable restored" in failed.message
    assert "canary unknown (unknown)" in failed.message
    assert "the release record may remain" in failed.message
    assert [f.rule for f in report.findings if f.rule != "GSR102"] == ["GSR103", "GSR104"]
    assert report.headline == "promote failed; SOME TAGS NOT RESTORED: canary"
    rows = {row[0]: row for row in report.tables[0].rows}
    assert rows["canary"][-1] == "unknown" and rows["edge"][-1] == D
    assert isinstance(report.result, ReleaseResult)
    assert report.result.record_state == "unknown"
    assert report.outputs["release-id"] == ""


def test_failure_with_every_tag_put_back_is_exit_1():
    outcome = _outcome(("stable", A, TagFate.RESTORED, A, True))
    outcome.fail("writing tag stable failed: denied")
    report = release_report("promote", outcome, None, None)
    assert report.exit_code(Severity.ERROR) == EXIT_FAILED
    assert report.headline == (
        "promote failed; every tag it wrote was put back or left to a later writer"
    )
