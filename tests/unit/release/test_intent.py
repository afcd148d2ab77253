"""Release intents on data: their tags, which unfinished release a run completes, and what
retention keeps for a release still under way."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from gpuship.release.config import KeepRule, ReleaseConfig, RetentionConfig
from gpuship.release.history import (
    closed_id_of,
    closed_tag,
    intent_id_of,
    intent_tag,
    is_history_tag,
    record_id_of,
    record_tag,
    tag_of,
)
from gpuship.release.intent import resumable, steps_of, superseded, unfinished_rollback
from gpuship.release.policy import TagAction, TagKind
from gpuship.release.record import ReleaseRecord, TagChange
from gpuship.release.retention import TagState, select_digests, select_tags

A, B, C = ("sha256:" + c * 64 for c in "abc")
WHEN = datetime(2026, 11, 29, 17, 0, tzinfo=timezone.utc)
PREFIX = "gpuship.releases"
RELEASE_ID = "20261129T170000Z-a1b2c3"
HOUR = timedelta(hours=1)


def _change(tag: str, before: str | None, after: str, kind: TagKind = TagKind.FLOATING):
    action = TagAction.MOVE if before else TagAction.CREATE
    return TagChange(tag=tag, kind=kind, before=before, after=after, action=action)


def _intent(
    release_id: str,
    kind: str,
    digest: str,
    *changes: TagChange,
    when: datetime = WHEN,
    state: str = "intent",
) -> ReleaseRecord:
    return ReleaseRecord(
        id=release_id,
        kind=kind,  # type: ignore[arg-type]
        time=when,
        repository="r.io/app",
        source=f"r.io/app@{digest}",
        digest=digest,
        media_type="application/vnd.oci.image.manifest.v1+json",
        tags=list(changes),
        state=state,  # type: ignore[arg-type]
    )


def test_intent_tags_are_history_and_apart_from_record_tags():
    tag = intent_tag(PREFIX, RELEASE_ID)
    assert tag == f"{PREFIX}.{RELEASE_ID}.intent" and len(tag) <= 128
    assert intent_id_of(PREFIX, tag) == RELEASE_ID
    assert record_id_of(PREFIX, tag) is None  # older gpuship versions do not take it as a record
    assert intent_id_of(PREFIX, record_tag(PREFIX, RELEASE_ID)) is None
    assert intent_id_of(PREFIX, f"{PREFIX}.not-an-id.intent") is None
    for history in (PREFIX, tag, record_tag(PREFIX, RELEASE_ID)):
        assert is_history_tag(PREFIX, history)
    assert not is_history_tag(PREFIX, "stable")
    assert not is_history_tag(PREFIX, f"other.{RELEASE_ID}.intent")
    intent = _intent(RELEASE_ID, "promote", B, _change("stable", A, B))
    assert tag_of(PREFIX, intent) == tag
    assert tag_of(PREFIX, intent.as_state("complete")) == record_tag(PREFIX, RELEASE_ID)


def test_a_closing_record_has_a_tag_of_its_own():
    """A release closed while it still ran stores its complete record later: the closing
    record must never be stored where it would replace it."""
    tag = closed_tag(PREFIX, RELEASE_ID)
    assert tag == f"{PREFIX}.{RELEASE_ID}.closed"
    assert len(f"{'p' * 97}.{RELEASE_ID}.closed") == 128  # the longest history-tag still fits
    assert closed_id_of(PREFIX, tag) == RELEASE_ID and is_history_tag(PREFIX, tag)
    assert record_id_of(PREFIX, tag) is None and intent_id_of(PREFIX, tag) is None
    assert closed_id_of(PREFIX, record_tag(PREFIX, RELEASE_ID)) is None
    assert closed_id_of(PREFIX, intent_tag(PREFIX, RELEASE_ID)) is None
    assert not is_history_tag(PREFIX, f"other.{RELEASE_ID}.closed")
    intent = _intent(RELEASE_ID, "promote", B, _change("stable", A, B))
    assert tag_of(PREFIX, intent.as_state("abandoned")) == tag != record_tag(PREFIX, RELEASE_ID)


def test_the_complete_record_is_the_intent_in_another_state():
    intent = _intent(RELEASE_ID, "promote", B, _change("stable", A, B))
    complete = intent.as_state("complete")
    assert complete.state == "complete" and intent.state == "intent"
    assert complete.model_dump(exclude={"state"}) == intent.model_dump(exclude={"state"})
    # Read back from JSON and completed by another run: the same bytes, so two runs that
    # complete one release store one record.
    again = ReleaseRecord.model_validate_json(intent.to_json()).as_state("complete")
    assert again.to_json() == complete.to_json()
    # Records written before intents existed have no state: complete.
    legacy = intent.model_dump(by_alias=True, mode="json")
    del legacy["state"]
    assert ReleaseRecord.model_validate(legacy).state == "complete"


def test_a_run_completes_the_stopped_release_it_repeats():
    stopped = _intent(
        "r2", "promote", B, _change("stable", A, B), _change("2.0.0", None, B, TagKind.IMMUTABLE)
    )
    unfinished = [_intent("r1", "promote", C, _change("stable", A, C)), stopped]
    # Written part-way (stable moved, 2.0.0 not yet), or not at all, or all of it.
    for now in (
        {"stable": B, "2.0.0": None},
        {"stable": A, "2.0.0": None},
        {"stable": B, "2.0.0": B},
    ):
        assert resumable(unfinished, [], "promote", B, now) is stopped
    assert steps_of(stopped)[0].before == A  # what the tag held before the stopped run
    # Not the same release: another digest, another kind, other tags, or a tag moved since.
    assert resumable(unfinished, [], "promote", A, {"stable": B, "2.0.0": None}) is None
    assert resumable(unfinished, [], "rollback", B, {"stable": B, "2.0.0": None}) is None
    assert resumable(unfinished, [], "promote", B, {"stable": B}) is None
    assert resumable(unfinished, [], "promote", B, {"stable": C, "2.0.0": None}) is None


def test_a_release_of_its_tags_recorded_since_rules_a_stopped_one_out():
    """An intent is resumed only while no complete record newer than it touched its tags:
    else its record would sort before that release, with the stopped run's time and actor."""
    stopped = _intent("r5", "promote", B, _change("stable", A, B))
    back = _intent("r6", "rollback", A, _change("stable", B, A), when=WHEN + HOUR, state="complete")
    assert resumable([stopped], [], "promote", B, {"stable": A}) is stopped
    assert resumable([stopped], [back], "promote", B, {"stable": A}) is None
    older = back.model_copy(update={"time": WHEN - HOUR})
    assert resumable([stopped], [older], "promote", B, {"stable": A}) is stopped
    other = _intent("r7", "promote", C, _change("prod", A, C), when=WHEN + HOUR, state="complete")
    assert resumable([stopped], [other], "promote", B, {"stable": A}) is stopped
    # A rollback bouncing between two digests: the old stopped rollback to A is not resumed
    # once a promote recorded since moved the tag back to B.
    bounced = _intent("r8", "rollback", A, _change("stable", B, A))
    again = _intent("r9", "promote", B, _change("stable", A, B), when=WHEN + HOUR, state="complete")
    assert resumable([bounced], [again], "rollback", A, {"stable": B}) is None


def test_a_stopped_release_is_superseded_once_nothing_of_it_is_left():
    stopped = _intent(
        "r5", "promote", B, _change("stable", A, B), _change("2.0.0", None, B, TagKind.IMMUTABLE)
    )
    back = _intent("r6", "rollback", A, _change("stable", B, A), when=WHEN + HOUR, state="complete")
    # stable taken over by the later rollback; 2.0.0 never written, or put back.
    assert superseded(stopped, [back], {"2.0.0": None})
    assert not superseded(stopped, [back], {"2.0.0": B})  # 2.0.0 still published by it
    assert not superseded(stopped, [back], {})  # 2.0.0 unknown
    # Without a later release of its tags, an intent whose tags hold nothing of it may be a
    # run still under way, before its first write: never closed.
    assert not superseded(stopped, [], {"stable": A, "2.0.0": None})
    assert not superseded(stopped, [back.model_copy(update={"time": WHEN - HOUR})], {})
    # A later release of every tag supersedes it whatever they hold.
    again = _intent("r7", "promote", B, *stopped.tags, when=WHEN + HOUR, state="complete")
    assert superseded(stopped, [again], {})
    assert not superseded(stopped, [stopped.as_state("complete")], {})  # its own record


def test_a_stopped_rollback_whose_write_landed_is_completed_not_rolled_back_further():
    stopped = _intent("r3", "rollback", A, _change("stable", B, A))
    promote = _intent("r4", "promote", C, _change("stable", A, C))
    assert unfinished_rollback([stopped, promote], "stable", A) is stopped
    assert unfinished_rollback([stopped, promote], "stable", B) is None  # it had not landed
    assert unfinished_rollback([stopped], "prod", A) is None
    assert unfinished_rollback([promote], "stable", C) is None  # a promote: rolled back


def test_retention_keeps_what_an_unfinished_release_names_and_its_children():
    old = WHEN - timedelta(days=400)
    states = [TagState("sha-1", A, old), TagState("sha-2", B, old), TagState("sha-3", C, old)]
    config = ReleaseConfig(retention=RetentionConfig(keep=[KeepRule(pattern="sha-.*", newest=0)]))
    decisions = select_tags(states, config, WHEN)
    assert not any(d.keep for d in decisions)
    references = {B: [C], C: []}
    digests = {d.digest: d for d in select_digests(states, decisions, references, {B})}
    assert digests[A].delete
    assert not digests[B].delete and "unfinished release" in digests[B].reason
    assert not digests[C].delete and "referenced" in digests[C].reason  # B's child
