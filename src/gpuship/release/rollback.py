"""Where a rollback goes, decided on the recorded history alone."""

from __future__ import annotations

from collections.abc import Sequence

from gpuship.errors import InputError
from gpuship.release.policy import TagAction
from gpuship.release.record import ReleaseRecord


def previous_digest(records: Sequence[ReleaseRecord], tag: str, current: str) -> tuple[str, str]:
    """The digest `tag` had before the newest recorded move that put it at `current`.

    Returns (digest, release id of that move). InputError when the history has no such move
    (the tag was moved outside gpuship, or never had a previous digest).
    """
    for record in reversed(records):
        for change in record.tags:
            if change.tag != tag or change.action is not TagAction.MOVE:
                continue
            if change.after == current and change.before is not None:
                return change.before, record.id
    raise InputError(
        f"no recorded move of tag {tag!r} to its current digest {current}: "
        "give --to DIGEST or --to RELEASE (see `gpuship history`)"
    )
