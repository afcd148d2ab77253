"""Rollback targets on data: what a recorded rollback can return a floating tag to, and how
many of each tag's releases retention keeps them for."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Literal

import pytest

from gpuship.release.config import ReleaseConfig
from gpuship.release.policy import TagAction, TagKind
from gpuship.release.record import ReleaseRecord, TagChange
from gpuship.release.retention import TagState, select_digests, select_tags
from gpuship.release.targets import release_targets, rollback_targets

START = datetime(2026, 11, 1, tzinfo=timezone.utc)


def _d(n: int) -> str:
    return "sha256:" + f"{n:064x}"


def _release(
    n: int,
    digest: int,
    changes: list[tuple[str, int | None]],
    *,
    immutable: tuple[str, ...] = (),
    state: Literal["intent", "complete"] = "complete",
) -> ReleaseRecord:
    """Release number `n` of `_d(digest)`: each floating (tag, digest before) moved (or created:
    before None), each immutable tag created."""
    tags = [
        TagChange(
            tag=tag,
            kind=TagKind.FLOATING,
            before=None if before is None else _d(before),
            after=_d(digest),
            action=TagAction.CREATE if before is None else TagAction.MOVE,
        )
        for tag, before in changes
    ]
    tags += [
        TagChange(tag=t, kind=TagKind.IMMUTABLE, before=None, after=_d(digest), action="create")
        for t in immutable
    ]
    return ReleaseRecord(
        id=f"r{n}",
        kind="promote",
        time=START + timedelta(hours=n),
        repository="reg.example/app",
        source=f"reg.example/app@{_d(digest)}",
        digest=_d(digest),
        media_type="application/vnd.oci.image.manifest.v1+json",
        tags=tags,
        state=state,
    )


def test_a_release_makes_the_digest_it_moved_from_and_its_own_targets():
    record = _release(2, 2, [("staging", 1), ("prod", None)], immutable=("1.0.0",))
    found = {(t.digest, t.tag, t.moved_from) for t in release_targets(record)}
    # staging moved from 1 (plain rollback) and to 2 (--to r2); prod created at 2; the
    # immutable 1.0.0 is never rolled back.
    assert found == {(_d(1), "staging", True), (_d(2), "staging", False), (_d(2), "prod", False)}
    unchanged = record.model_copy(
        update={"tags": [c.model_copy(update={"action": TagAction.UNCHANGED}) for c in record.tags]}
    )
    assert release_targets(unchanged) == []
    assert release_targets(_release(3, 3, [], immutable=("1.1.0",))) == []


def test_the_issue_scenario_keeps_where_staging_was_before():
    """#32: staging moved to A, then to B; A is where a rollback goes, B where staging is."""
    history = [_release(1, 1, [("staging", None)]), _release(2, 2, [("staging", 1)])]
    targets = rollback_targets(history, 5)
    assert targets == {
        _d(1): "rollback target of staging, release r2 (staging was here before it)",
        _d(2): "rollback target of staging, release r2 (its digest)",
    }


def test_only_each_tags_newest_releases_count_and_a_rollback_is_one():
    """staging: 1 -> 2 -> 3 -> 4, then a rollback back to 3; prod: created at 1 (long ago)."""
    history = [
        _release(1, 1, [("staging", None), ("prod", None)]),
        _release(2, 2, [("staging", 1)]),
        _release(3, 3, [("staging", 2)]),
        _release(4, 4, [("staging", 3)]),
        _release(5, 3, [("staging", 4)]),
    ]
    # keep 2: staging's r5 (from 4, to 3) and r4 (from 3, to 4); prod's r1 (at 1).
    assert set(rollback_targets(history, 2)) == {_d(4), _d(3), _d(1)}
    # keep 3 adds r3 (from 2); 1 is still kept for prod, whose one release is r1.
    assert set(rollback_targets(history, 3)) == {_d(4), _d(3), _d(2), _d(1)}
    assert rollback_targets(history, 0) == {}
    # The newest release naming a digest gives the reason.
    assert "release r5" in rollback_targets(history, 2)[_d(3)]


@pytest.mark.parametrize("keep_releases", [1, 3, 5])
def test_a_recorded_line_of_moves_keeps_n_digests_besides_the_current_one(keep_releases: int):
    """Each release starts where the one before left it: `keep_releases` targets besides the
    digest the tag points at (the cost the docs state); a tag also moved outside gpuship in
    between can add one more per release."""
    linear = [_release(1, 1, [("prod", None)])]
    linear += [_release(n, n, [("prod", n - 1)]) for n in range(2, 12)]
    assert set(rollback_targets(linear, keep_releases)) == {
        _d(n) for n in range(11 - keep_releases, 12)
    }
    jumpy = [_release(n, 2 * n, [("prod", 2 * n - 1)]) for n in range(1, 12)]
    assert len(rollback_targets(jumpy, keep_releases)) == 2 * keep_releases


def test_an_unfinished_release_keeps_its_targets_however_old():
    old = _release(1, 7, [("staging", 6)], state="intent")
    history = [old, *(_release(n, n + 10, [("staging", n + 9)]) for n in range(2, 6))]
    assert _d(6) not in rollback_targets(history, 2)
    assert {_d(6), _d(7)} <= set(rollback_targets(history, 2, [old]))


@pytest.mark.parametrize("keep_releases", [1, 3])
def test_retention_never_selects_a_target_even_when_every_tag_on_it_is_past_retention(
    keep_releases: int,
):
    """The digest staging was moved from has only a candidate tag, past `newest: 1`: kept as a
    rollback target, with the reason; the one no kept release names goes."""
    config = ReleaseConfig.model_validate(
        {"retention": {"keep": [{"pattern": "sha-.*", "newest": 1}]}}
    )
    states = [
        TagState("sha-aaaaaaa-c", _d(1), START),
        TagState("sha-bbbbbbb-c", _d(2), START + timedelta(hours=1)),
        TagState("sha-ccccccc-c", _d(3), START + timedelta(hours=2)),
        TagState("staging", _d(2), START + timedelta(hours=4)),
    ]
    history = [_release(3, 1, [("staging", None)]), _release(4, 2, [("staging", 1)])]
    targets = rollback_targets(history, keep_releases)
    decisions = select_tags(states, config, START + timedelta(days=1))
    digests = {d.digest: d for d in select_digests(states, decisions, {}, (), targets)}
    assert not digests[_d(1)].delete
    assert (
        digests[_d(1)].reason
        == "rollback target of staging, release r4 (staging was here before it)"
    )
    # Without the targets (the old behaviour) it was selected.
    assert {d.digest for d in select_digests(states, decisions, {}) if d.delete} == {_d(1)}
    assert not digests[_d(2)].delete and not digests[_d(3)].delete
