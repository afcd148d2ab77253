"""Where a rollback goes, decided on the recorded history and the tag's actual digest, and the
release that takes it there (refused if the tag moves meanwhile)."""

from __future__ import annotations

from collections.abc import Sequence

from gpuship.errors import InputError
from gpuship.reference import Repository, is_digest
from gpuship.registry.client import RegistryClient
from gpuship.registry.errors import NotFound
from gpuship.release.config import ReleaseConfig
from gpuship.release.consistency import read_tag
from gpuship.release.history import explain, find_release, load_history, record_tag
from gpuship.release.intent import unfinished_rollback
from gpuship.release.policy import TagAction, TagRequest, classify_tags
from gpuship.release.promote import ReleaseRequest
from gpuship.release.record import ReleaseRecord
from gpuship.release.targets import release_targets
from gpuship.release.trust import Trust, chain_break

_GIVE_TO = "give --to DIGEST or --to RELEASE (see `gpuship history`)"
_NOTHING = (
    "nothing was moved; give --to a digest or release the repository still holds "
    "(`gpuship history` marks the gone ones GONE)"
)


def previous_digest(records: Sequence[ReleaseRecord], tag: str, current: str) -> tuple[str, str]:
    """The digest `tag` had before the newest recorded move that put it at `current`, where
    the chain of records shows the tag held it (`trust.chain_break`).

    Returns (digest, release id of that move). InputError saying exactly what disagrees when
    the history has no such move, or when that move does not join the chain (a move outside
    gpuship, or a forged record: nothing is moved).
    """
    for record in reversed(records):
        for change in record.tags:
            if change.tag != tag or change.action is not TagAction.MOVE:
                continue
            if change.after == current and change.before is not None:
                broken = chain_break(records, record, tag)
                if broken is not None:
                    raise InputError(f"{broken}; rollback does not follow it; {_GIVE_TO}")
                return change.before, record.id
    raise InputError(_disagreement(records, tag, current))


def _disagreement(records: Sequence[ReleaseRecord], tag: str, current: str) -> str:
    """Why the history cannot say where `tag` goes back to, in one line."""
    placed = explain(records, tag, current)
    if placed is not None:
        return (
            f"no recorded move of tag {tag!r} to its current digest {current}: release "
            f"{placed.id} left it there without a previous digest; {_GIVE_TO}"
        )
    changes = [
        (record, change)
        for record in records
        for change in record.tags
        if change.tag == tag and change.action in (TagAction.MOVE, TagAction.CREATE)
    ]
    if not changes:
        return f"no recorded move of tag {tag!r} (it is at {current}); {_GIVE_TO}"
    record, change = changes[-1]
    return (
        f"no recorded move of tag {tag!r} to its current digest {current}: the newest recorded "
        f"change, release {record.id} at {record.time.isoformat(timespec='seconds')}, put it "
        f"at {change.after}; another release may still be running, or the tag was moved "
        f"outside gpuship; {_GIVE_TO}"
    )


def rollback_target(
    records: Sequence[ReleaseRecord], tag: str, current: str | None, to: str | None
) -> tuple[str, str | None]:
    """(digest to go to, release id it comes from): `to` as a digest or a release id, else
    the digest before the newest recorded move to `current`."""
    if to and is_digest(to):
        return to, None
    if to:
        chosen = find_release(records, to)
        return chosen.digest, chosen.id
    if current is None:
        raise InputError(f"tag {tag!r} does not exist: nothing to roll back; {_GIVE_TO}")
    return previous_digest(records, tag, current)


def target_gone(
    repo: Repository,
    tag: str,
    digest: str,
    records: Sequence[ReleaseRecord],
    release_id: str | None,
) -> str:
    """The one line refusing a rollback of `tag` to `digest`, which `repo` does not hold:
    the release that makes it a target (`release_id`, else the newest naming it), if any.
    Nothing records a delete, so who removed it is said to be unknown."""
    for record in reversed(records):
        if release_id is not None and record.id != release_id:
            continue
        named = [t for t in release_targets(record) if (t.tag, t.digest) == (tag, digest)]
        if named or record.digest == digest:
            why = named[0].reason if named else f"the digest of release {record.id}"
            return (
                f"cannot roll back {repo}:{tag} to {digest} ({why}): the repository no longer "
                "holds that manifest, and who removed it is unknown (gpuship records no "
                f"deletes: a prune that did not keep it, or a delete outside gpuship); {_NOTHING}"
            )
    return (
        f"cannot roll back {repo}:{tag} to {digest}: the repository holds no such manifest and "
        f"no recorded release names it; {_NOTHING}"
    )


def rollback_request(
    client: RegistryClient,
    repo: Repository,
    tag: str,
    to: str | None,
    config: ReleaseConfig,
    *,
    expect: str | None = None,
) -> ReleaseRequest:
    """The release that points floating `tag` at `to` (or its previous digest), recorded as
    a rollback.

    Decided from the tag's digest read here and every release the repository's trust lets it
    follow (`trust.py`), unfinished ones included (an interrupted promote's moves can be
    rolled back; an interrupted rollback that already
    moved the tag is completed, not rolled back further); the release refuses to write if the
    tag has moved by the time it reads it again (another writer). A target the repository no
    longer holds is refused here, before anything is written (`target_gone`).

    A rollback whose tag moved after it started writes nothing either: the tags are listed
    first, and a release that put the tag where it is now and was not recorded at that list
    moved it meanwhile (two rollbacks at once: the one that read the tag after the other
    moved it would otherwise undo it). `expect`: the digest the tag must hold (`--expect`).
    """
    requests = tuple(classify_tags(config.tags, [], [tag]))
    started = _tags_now(client, repo)
    trust = Trust.of(config.signatures)
    history, _ = load_history(
        client, repo, config.history_tag, newest=config.history_limit, keys=trust.keys
    ).vetted(config.history_tag, trust)
    fetched = read_tag(client, repo, tag)
    current = fetched.digest if fetched is not None else None
    if expect is not None and current != expect:
        return _refused(
            repo, requests, current, f"{tag} points at {current or 'nothing'}, not at {expect}"
        )
    placed = explain(history.entries, tag, current) if current is not None else None
    # An unfinished one is completed below (`unfinished_rollback`), or rolled back from.
    # (A record of the index older gpuship versions kept has no tag of its own: not new.)
    placed_id = placed.id if placed is not None else ""
    placed_tag = record_tag(config.history_tag, placed_id)
    if placed_tag in history.artifacts and placed_tag not in started:
        return _refused(
            repo,
            requests,
            current,
            f"{tag} was moved to {current} by release {placed_id} after this rollback "
            "started (another writer); run it again to decide from the new state",
        )
    stopped = unfinished_rollback(history.unfinished, tag, current) if to is None else None
    if stopped is not None:
        digest, rollback_of = stopped.digest, stopped.rollback_of
    else:
        digest, rollback_of = rollback_target(history.entries, tag, current, to)
    if client.head_manifest(repo.at(digest)) is None:
        named = stopped.id if stopped is not None else rollback_of
        raise InputError(target_gone(repo, tag, digest, history.entries, named))
    return ReleaseRequest(
        repo.at(digest), repo, requests, "rollback", rollback_of, expected={tag: current}
    )


def _tags_now(client: RegistryClient, repo: Repository) -> frozenset[str]:
    try:
        return frozenset(client.list_tags(repo))
    except NotFound:
        return frozenset()


def _refused(
    repo: Repository, requests: tuple[TagRequest, ...], current: str | None, why: str
) -> ReleaseRequest:
    """A rollback that writes nothing and says why (it reports like any refused release)."""
    if current is None:
        raise InputError(f"{why}: nothing to roll back")
    return ReleaseRequest(repo.at(current), repo, requests, "rollback", expected={}, refusal=why)
