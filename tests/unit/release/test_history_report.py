"""`gpuship history`'s report on data: the rows, the headline and the outputs of a listing."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from gpuship.reference import parse_reference
from gpuship.release.history_report import HistoryListing, history_report
from gpuship.release.policy import TagAction, TagKind
from gpuship.release.record import ReleaseRecord, TagChange
from gpuship.release.result import HistoryResult

START = datetime(2026, 11, 1, tzinfo=timezone.utc)


def _d(n: int) -> str:
    return "sha256:" + f"{n:064x}"


def _release(n: int, before: int | None, after: int, state: str = "complete") -> ReleaseRecord:
    action = TagAction.CREATE if before is None else TagAction.MOVE
    change = TagChange(
        tag="stable",
        kind=TagKind.FLOATING,
        before=None if before is None else _d(before),
        after=_d(after),
        action=action,
    )
    return ReleaseRecord.model_validate(
        {
            "id": f"r{n}",
            "kind": "promote",
            "time": START + timedelta(hours=n),
            "repository": "reg.example/app",
            "source": f"reg.example/app@{_d(after)}",
            "digest": _d(after),
            "media_type": "application/vnd.oci.image.manifest.v1+json",
            "tags": [change],
            "state": state,
        }
    )


def test_a_tag_listing_names_the_release_that_put_it_there_and_what_is_gone() -> None:
    first, second, running = _release(1, None, 1), _release(2, 1, 2), _release(3, 2, 3, "intent")
    listing = HistoryListing(
        reference=parse_reference("reg.example/app:stable", default_tag=None),
        records=(first, second, running),
        shown=(running, second, first),
        current=_d(2),
        placed=second,
        gone=frozenset({_d(1)}),
    )
    report = history_report("history", listing)
    assert report.headline == (
        "3 releases recorded for reg.example/app:stable (1 unfinished: under way, or "
        "interrupted; the same command run again completes one); 1 digests they name are GONE "
        f"from the repository (a rollback to one is refused); stable is at {_d(2)}, put there "
        "by release r2"
    )
    (table,) = report.tables
    assert [row[0] for row in table.rows] == ["r3", "r2", "r1"]
    assert table.rows[0][2] == "promote (UNFINISHED)"
    assert table.rows[1][5] == f"stable: {_d(1)[:19]} (GONE) -> {_d(2)[:19]} (move)"
    assert table.rows[2][4] == f"{_d(1)[:19]} (GONE)"
    assert report.outputs == {"latest-release": "r2"}  # the newest complete one
    assert report.result == HistoryResult(
        "reg.example/app", "stable", _d(2), "r2", (running, second, first), (_d(1),)
    )


def test_a_tag_no_release_put_there_says_so() -> None:
    listing = HistoryListing(
        reference=parse_reference("reg.example/app:stable", default_tag=None),
        records=(),
        shown=(),
        current=_d(9),
        placed=None,
        gone=frozenset(),
    )
    report = history_report("history", listing)
    assert report.headline == (
        f"0 releases recorded for reg.example/app:stable; stable is at {_d(9)}, which no "
        "recorded release put there"
    )
    assert report.outputs == {}
