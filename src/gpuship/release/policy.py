"""Tag policy on data: which requested tags are immutable or floating, and what each write does.

Nothing here talks to a registry; `plan_tags` takes the digests the tags point at now.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from gpuship.errors import InputError
from gpuship.reference import is_valid_tag
from gpuship.release.config import TagPolicyConfig


class TagKind(str, enum.Enum):
    """Immutable tags are written once; floating tags move and every move is recorded."""

    IMMUTABLE = "immutable"
    FLOATING = "floating"


class TagAction(str, enum.Enum):
    """What promotion does to one tag."""

    CREATE = "create"
    MOVE = "move"
    UNCHANGED = "unchanged"
    CONFLICT = "conflict"


@dataclass(frozen=True)
class TagRequest:
    """A tag asked for on the command line and the kind the policy gives it."""

    tag: str
    kind: TagKind


@dataclass(frozen=True)
class TagStep:
    """One planned tag write: where the tag points now (`before`) and where it will (`after`)."""

    tag: str
    kind: TagKind
    before: str | None
    after: str
    action: TagAction

    @property
    def writes(self) -> bool:
        """True if this step changes the registry."""
        return self.action in (TagAction.CREATE, TagAction.MOVE)


def matches_any(patterns: Iterable[str], tag: str) -> bool:
    """True if `tag` fully matches one of the regexes."""
    return any(re.fullmatch(pattern, tag) for pattern in patterns)


def classify_tags(
    policy: TagPolicyConfig, fixed: Sequence[str], moving: Sequence[str]
) -> list[TagRequest]:
    """Check `--tag` (written once) and `--move` (floating) tags against the policy.

    A `--tag` matching a floating pattern, or a `--move` matching an immutable one, is an input
    error: the command line and the policy disagree about what the tag is.
    """
    requests: list[TagRequest] = []
    seen: set[str] = set()
    for tag, kind in [(t, TagKind.IMMUTABLE) for t in fixed] + [
        (t, TagKind.FLOATING) for t in moving
    ]:
        if not is_valid_tag(tag):
            raise InputError(f"invalid tag {tag!r}: tags are [A-Za-z0-9_][A-Za-z0-9._-]{{0,127}}")
        if tag in seen:
            raise InputError(f"tag {tag!r} is given more than once")
        seen.add(tag)
        if kind is TagKind.IMMUTABLE and matches_any(policy.floating, tag):
            raise InputError(
                f"--tag {tag}: the tag matches release.tags.floating; use --move {tag} to move it"
            )
        if kind is TagKind.FLOATING and matches_any(policy.immutable, tag):
            raise InputError(
                f"--move {tag}: the tag matches release.tags.immutable and can never be moved"
            )
        requests.append(TagRequest(tag, kind))
    if not requests:
        raise InputError("nothing to promote to: give at least one --tag or --move")
    return requests


def plan_tags(
    requests: Sequence[TagRequest], before: Mapping[str, str | None], digest: str
) -> list[TagStep]:
    """The write for each tag, floating tags first.

    Floating moves go first because they are undone by a plain PUT of the old manifest, while
    undoing a newly created tag needs a tag delete: a failure part-way then leaves less to undo.
    """
    steps: list[TagStep] = []
    for request in sorted(requests, key=lambda r: r.kind is TagKind.IMMUTABLE):
        current = before.get(request.tag)
        if current == digest:
            action = TagAction.UNCHANGED
        elif current is None:
            action = TagAction.CREATE
        elif request.kind is TagKind.IMMUTABLE:
            action = TagAction.CONFLICT
        else:
            action = TagAction.MOVE
        steps.append(TagStep(request.tag, request.kind, current, digest, action))
    return steps
