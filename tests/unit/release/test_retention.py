"""Retention selection on data: keep rules, protections, digest-level safety."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from gpuship.release.config import ReleaseConfig
from gpuship.release.retention import (
    TagState,
    closure,
    digest_tag_subject,
    select_digests,
    select_tags,
)

NOW = datetime(2026, 11, 29, tzinfo=timezone.utc)


def _d(n: int) -> str:
    return "sha256:" + f"{n:064x}"


def _config(**retention: object) -> ReleaseConfig:
    return ReleaseConfig.model_validate({"retention": retention})


def _state(tag: str, digest: int, days: float | None) -> TagState:
    return TagState(tag, _d(digest), None if days is None else NOW - timedelta(days=days))


def test_newest_and_age_rules():
    config = _config(
        keep=[{"pattern": "n-.*", "newest": 2}, {"pattern": "pr-.*", "younger-than-days": 7}]
    )
    states = [
        _state("n-1", 1, 40),
        _state("n-2", 2, 30),
        _state("n-3", 3, 20),
        _state("n-4", 4, 10),
        _state("pr-a", 5, 8),
        _state("pr-b", 6, 6),
        _state("other", 7, 900),
        _state("n-x", 8, None),
    ]
    keep = {d.tag: d.keep for d in select_tags(states, config, NOW)}
    assert keep == {
        "n-1": False,
        "n-2": False,
        "n-3": True,
        "n-4": True,
        "pr-a": False,
        "pr-b": True,
        "other": True,
        "n-x": True,
    }


def test_protections_win_over_rules():
    config = _config(
        keep=[{"pattern": ".*", "newest": 0}], protect=["keep-.*"], **{"protect-immutable": True}
    )
    states = [
        _state("stable", 1, 99),
        _state("keep-me", 2, 99),
        _state("1.2.3", 3, 99),
        _state("gpuship.releases", 4, 99),
        _state("scratch", 5, 99),
    ]
    decisions = {d.tag: d for d in select_tags(states, config, NOW)}
    assert decisions["stable"].reason == "floating tag"
    assert decisions["keep-me"].reason == "protected pattern"
    assert decisions["1.2.3"].keep
    assert decisions["gpuship.releases"].reason == "release history"
    assert not decisions["scratch"].keep


def test_digest_safety_closure_and_shared_tags():
    config = _config(keep=[{"pattern": "n-.*", "newest": 0}])
    # 1: only n-1 -> deleted. 2: n-2 and stable -> kept. 3: child of index 9 (tag 1.0.0) -> kept.
    # 4: deleted; its signature tag follows it. 5: referrer of kept 9 -> kept.
    sig4 = _d(4).replace(":", "-") + ".sig"
    states = [
        _state("n-1", 1, 50),
        _state("n-2", 2, 50),
        _state("stable", 2, 50),
        _state("n-3", 3, 50),
        _state("1.0.0", 9, 50),
        _state("n-4", 4, 50),
        _state(sig4, 40, 1),
        _state("n-5", 5, 50),
    ]
    decisions = select_tags(states, config, NOW)
    references = {_d(9): [_d(3), _d(5)]}
    result = {d.digest: d.delete for d in select_digests(states, decisions, references)}
    assert result == {
        _d(1): True,
        _d(2): False,
        _d(3): False,
        _d(9): False,
        _d(4): True,
        _d(40): True,
        _d(5): False,
    }


def test_digest_tag_subjects():
    hexa = "a" * 64
    assert digest_tag_subject(f"sha256-{hexa}") == f"sha256:{hexa}"
    assert digest_tag_subject(f"sha256-{hexa}.att") == f"sha256:{hexa}"
    assert digest_tag_subject("sha256-short") is None
    assert digest_tag_subject("latest") is None


def test_closure_is_breadth_first_names_parents_and_stops_at_stop_digests():
    """One walk for retention, claims and prune's orphans: roots first, each digest with the
    digest it was first reached from; a `stop` digest is neither listed nor followed unless it
    is a root; cycles (a referrer of a referrer of itself) end."""
    graph = {"i": ["a", "b"], "a": ["s"], "b": ["a", "c"], "c": ["i"], "s": ["x"], "r": ["b"]}
    found = closure(["i", "r"], lambda digest: graph.get(digest, ()), stop={"s", "r"})
    assert list(found.items()) == [("i", None), ("r", None), ("a", "i"), ("b", "i"), ("c", "b")]
    assert set(closure(["s"], lambda digest: graph.get(digest, ()))) == {"s", "x"}


def test_per_cell_tags_are_candidates_not_floating_tags():
    """docs/operations/image-updates.md, "Which tags move": a cell's own tag (`cu124-py3.11`)
    moves with every build of main and no release records it; the digest it left keeps only
    its candidate tag and goes with the candidate rule, the digest it points at stays while no
    keep rule covers the cell tag, and a keep rule that does cover it treats it as a candidate."""
    config = _config(keep=[{"pattern": "sha-.*", "newest": 1}])
    states = [
        _state("sha-aaaaaaa-cu124-py3.11", 1, 2),  # the build the cell tag moved from
        _state("sha-bbbbbbb-cu124-py3.11", 2, 1),
        _state("cu124-py3.11", 2, 1),
    ]
    decisions = {d.tag: d for d in select_tags(states, config, NOW)}
    assert decisions["cu124-py3.11"].keep and decisions["cu124-py3.11"].reason != "floating tag"
    result = {d.digest: d.delete for d in select_digests(states, list(decisions.values()), {})}
    assert result == {_d(1): True, _d(2): False}
    covered = _config(keep=[{"pattern": "sha-.*", "newest": 0}, {"pattern": "cu.*", "newest": 0}])
    decisions = {d.tag: d for d in select_tags(states, covered, NOW)}
    assert not decisions["cu124-py3.11"].keep
