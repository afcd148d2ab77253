"""Retention on data: which tags to keep and which digests are safe to delete.

Deleting works on digests (a manifest DELETE removes every tag on it), so a digest is only
deleted when every tag on it is to be deleted and nothing kept references it: it is not a
child of a kept index, not a referrer of a kept digest, not a release record (reference §0.6,
§4.7), not a rollback target (`targets.py`: where a floating tag's recent releases moved it
from). Tags no keep rule covers are never touched.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from gpuship.release.config import KeepRule, ReleaseConfig
from gpuship.release.policy import matches_any

# Referrers-tag schema and cosign tags: `sha256-<hex>` plus optional `.sig`/`.att`/`.sbom`.
_DIGEST_TAG_RE = re.compile(r"^(sha256)-([a-f0-9]{64})(\..+)?$")


@dataclass(frozen=True)
class TagState:
    """A tag, the digest it points at, and when that digest was created/released (if known)."""

    tag: str
    digest: str
    created: datetime | None


@dataclass(frozen=True)
class TagDecision:
    """Keep or delete a tag, and why."""

    tag: str
    digest: str
    keep: bool
    reason: str


@dataclass(frozen=True)
class DigestDecision:
    """Delete or keep a digest, its tags, and why."""

    digest: str
    tags: tuple[str, ...]
    delete: bool
    reason: str


def digest_tag_subject(tag: str) -> str | None:
    """The subject digest of a `sha256-<hex>[.suffix]` referrer/signature tag, else None."""
    match = _DIGEST_TAG_RE.match(tag)
    return f"{match.group(1)}:{match.group(2)}" if match else None


def _rule_keeps(rule: KeepRule, state: TagState, ranked: Sequence[TagState], now: datetime) -> str:
    """Why `rule` keeps `state` ("" if it does not)."""
    if state.created is None:
        return f"matches /{rule.pattern}/ but its creation time is unknown"
    if rule.newest is not None:
        position = ranked.index(state)
        if position < rule.newest:
            return f"among the {rule.newest} newest of /{rule.pattern}/ (#{position + 1})"
    if rule.younger_than_days is not None:
        age = now - state.created
        if age < timedelta(days=rule.younger_than_days):
            return f"younger than {rule.younger_than_days:g} days (/{rule.pattern}/)"
    return ""


def select_tags(
    states: Sequence[TagState], config: ReleaseConfig, now: datetime
) -> list[TagDecision]:
    """Decide every tag (except referrer tags, which follow their subject)."""
    retention = config.retention
    decisions: list[TagDecision] = []
    ranked_by_rule: dict[int, list[TagState]] = {}
    for number, rule in enumerate(retention.keep):
        matching = [s for s in states if re.fullmatch(rule.pattern, s.tag)]
        # Newest first; unknown times sort last (they are kept anyway).
        ranked_by_rule[number] = sorted(
            matching,
            key=lambda s: (s.created is None, -(s.created.timestamp() if s.created else 0)),
        )
    for state in states:
        if digest_tag_subject(state.tag) is not None:
            continue
        reason = _protection(state.tag, config)
        if not reason:
            rules = [n for n, r in enumerate(retention.keep) if re.fullmatch(r.pattern, state.tag)]
            if not rules:
                reason = "no keep rule covers it"
            for number in rules:
                reason = _rule_keeps(retention.keep[number], state, ranked_by_rule[number], now)
                if reason:
                    break
        if reason:
            decisions.append(TagDecision(state.tag, state.digest, True, reason))
        else:
            patterns = ", ".join(
                f"/{retention.keep[n].pattern}/"
                for n in range(len(retention.keep))
                if re.fullmatch(retention.keep[n].pattern, state.tag)
            )
            decisions.append(
                TagDecision(state.tag, state.digest, False, f"not kept by any rule for {patterns}")
            )
    return decisions


def _protection(tag: str, config: ReleaseConfig) -> str:
    if tag == config.history_tag:
        return "release history"
    if matches_any(config.retention.protect, tag):
        return "protected pattern"
    if matches_any(config.tags.floating, tag):
        return "floating tag"
    if config.retention.protect_immutable and matches_any(config.tags.immutable, tag):
        return "immutable tag (protect-immutable)"
    return ""


def select_digests(
    states: Sequence[TagState],
    decisions: Sequence[TagDecision],
    references: Mapping[str, Iterable[str]],
    claimed: Iterable[str] = (),
    targets: Mapping[str, str] | None = None,
) -> list[DigestDecision]:
    """Which digests to delete.

    `references` maps a digest to the digests it keeps alive (index children, referrers,
    records); the closure over the kept tags' digests, the `claimed` ones (named by a
    release under way or interrupted) and the rollback `targets` (digest -> why,
    `targets.rollback_targets`) is protected.
    """
    keep_tag = {d.tag: d.keep for d in decisions}
    tags_of: dict[str, list[str]] = {}
    for state in states:
        tags_of.setdefault(state.digest, []).append(state.tag)
    claimed = set(claimed)
    targets = targets or {}
    kept_roots = {d.digest for d in decisions if d.keep} | claimed | set(targets)
    protected = set(closure(kept_roots, lambda digest: references.get(digest, ())))
    result: list[DigestDecision] = []
    for digest, tags in tags_of.items():
        ordinary = [t for t in tags if digest_tag_subject(t) is None]
        if not ordinary:
            continue  # only referrer tags: decided with their subject below
        kept_tags = [t for t in ordinary if keep_tag.get(t, True)]
        if kept_tags:
            reason = f"tag {kept_tags[0]} is kept"
        elif digest in claimed:
            reason = "an unfinished release names it (under way, or interrupted: run it again)"
        elif digest in targets:
            reason = targets[digest]
        elif digest in protected:
            reason = "referenced by a kept digest (index child, referrer or record)"
        else:
            reason = "every tag on it is past retention"
        result.append(
            DigestDecision(
                digest, tuple(sorted(tags)), not kept_tags and digest not in protected, reason
            )
        )
    deleted = {d.digest for d in result if d.delete}
    for digest, tags in tags_of.items():
        if all(digest_tag_subject(t) is not None for t in tags):
            subjects = {digest_tag_subject(t) for t in tags}
            gone = bool(subjects) and subjects <= deleted and digest not in protected
            reason = "its subject is deleted" if gone else "its subject is kept"
            result.append(DigestDecision(digest, tuple(sorted(tags)), gone, reason))
    return result


def closure(
    roots: Iterable[str],
    references: Callable[[str], Iterable[str]],
    stop: Collection[str] = frozenset(),
) -> dict[str, str | None]:
    """Every digest reachable from `roots` by `references` (index children, referrers), roots
    included, each mapped to the digest it was first reached from (None for a root), in the
    order found (breadth first: a parent before its children). A digest in `stop` that is not
    a root is neither included nor followed."""
    found: dict[str, str | None] = {}
    pending: deque[tuple[str, str | None]] = deque((root, None) for root in roots)
    while pending:
        digest, parent = pending.popleft()
        if digest in found or (parent is not None and digest in stop):
            continue
        found[digest] = parent
        pending.extend((child, digest) for child in references(digest))
    return found
