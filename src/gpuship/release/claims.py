"""Who claims a digest at the moment prune deletes it: the tags now, and the releases recorded
or under way since the plan.

Registries have no compare-and-swap, and `prune --apply` runs beside promotes and rollbacks.
Right before each DELETE, the tags are listed again and every tag is read (HEAD), and the
release history is read again (records and intents added since the plan, and intents still
unfinished). A digest that any tag points at, or that any of those releases names or moved a
floating tag from (a rollback target: `release/targets.py`), or that is reachable from one of
them (an index child, a referrer), is not deleted.

Between that check and the DELETE taking effect, a release can still tag the digest (more so
on a registry slow to delete). So after each DELETE the history is read once more: if a
release named the digest meanwhile, prune puts the manifest back (by digest), and the tags a
complete record wrote to it (the DELETE took them away). For a release that is still only an
intent, the manifest alone: that release writes its own tags (reading each back, and writing
it again if a DELETE took it), and it may yet fail and put them back, or have done so already,
so a tag prune wrote for it would be published with no record. A release that stored its
record before that second read is covered by it; one that stored it after checks its tags
itself after recording (`promote._recheck`) and writes back a tag a DELETE took away; one
killed meanwhile keeps its intent, and the same command run again writes its tags. What is
left open: a process killed between its DELETE and that second read, and writers other than
gpuship (they leave no intent) in the window of one DELETE.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import partial

from gpuship.errors import GpushipError
from gpuship.reference import Repository
from gpuship.registry.artifact import read_each
from gpuship.registry.client import FetchedManifest, RegistryClient
from gpuship.registry.errors import NotFound
from gpuship.registry.manifest import ImageIndex, ImageManifest, parse_manifest
from gpuship.release.history import RECORD_TYPE, is_history_tag, read_history_tag
from gpuship.release.record import ReleaseRecord
from gpuship.release.retention import DigestDecision, closure
from gpuship.release.targets import release_targets

# How often the tags are listed again when an intent read from the list has gone (removed once
# its complete record is stored, so the next list has that record).
_RELIST_ATTEMPTS = 3


class ContentReader:
    """Reads manifests (kept as fetched, to put one back) and their references once each."""

    def __init__(self, client: RegistryClient, repo: Repository) -> None:
        self.client = client
        self.repo = repo
        self._fetched: dict[str, FetchedManifest | None] = {}
        self._references: dict[str, list[str]] = {}
        self._reachable: dict[str, frozenset[str]] = {}

    def fetched(self, digest: str) -> FetchedManifest | None:
        """The manifest as the registry sent it (None: no such manifest)."""
        if digest not in self._fetched:
            try:
                self._fetched[digest] = self.client.get_manifest(self.repo.at(digest))
            except NotFound:
                self._fetched[digest] = None
        return self._fetched[digest]

    def document(self, digest: str) -> ImageManifest | ImageIndex | None:
        """The manifest parsed (None: no such manifest)."""
        fetched = self.fetched(digest)
        return parse_manifest(fetched.data, fetched.media_type) if fetched else None

    def references(self, digest: str) -> list[str]:
        """Index children and referrers; release records refer to images but belong to the
        history, not to the image."""
        if digest not in self._references:
            document = self.document(digest)
            children = (
                [d.digest for d in document.manifests] if isinstance(document, ImageIndex) else []
            )
            referrers = [
                d.digest
                for d in self.client.referrers(self.repo.at(digest))
                if d.artifact_type != RECORD_TYPE
            ]
            self._references[digest] = children + referrers
        return self._references[digest]

    def reachable(self, root: str) -> frozenset[str]:
        """`root` and every digest it refers to, directly or not (once per run: a manifest
        never changes, and its references are read once)."""
        if root not in self._reachable:
            self._reachable[root] = frozenset(closure([root], self.references))
        return self._reachable[root]


@dataclass
class Claims:
    """The plan's view of the history, kept current between deletes.

    `seen`: history tags already read or known at the plan; `releases`: releases that claim
    their digest whatever the tags say (intents unfinished at the plan, and anything recorded
    since), each with the newest word read on it (an abandoned one claims nothing).
    """

    client: RegistryClient
    repo: Repository
    prefix: str
    reader: ContentReader
    seen: set[str] = field(default_factory=set)
    releases: dict[str, ReleaseRecord] = field(default_factory=dict)

    def blocker(self, target: DigestDecision) -> str:
        """Why `target` must not be deleted now ("" if it may)."""
        tags = self._relist()
        if tags is None:
            return "the release history kept changing while it was read again"
        ordinary = [tag for tag in tags if not is_history_tag(self.prefix, tag)]
        heads = read_each(lambda tag: self.client.head_manifest(self.repo.tag(tag)), ordinary)
        now = {tag: head.digest for tag, head in zip(ordinary, heads, strict=True) if head}
        for tag in target.tags:
            if tag in now and now[tag] != target.digest:
                return f"tag {tag} now points at {now[tag]}, not at this digest"
        roots: dict[str, str] = {}
        for tag, digest in now.items():
            if not (digest == target.digest and tag in target.tags):
                roots.setdefault(digest, f"tag {tag} now points at")
        roots.update(self._released())
        return self._holder(roots, target.digest)

    def reclaim(self, target: DigestDecision) -> str:
        """After `target` was deleted: if a release claimed it meanwhile, put back the manifest
        and the tags a complete record of it wrote to it and the DELETE took away. Returns why
        it was put back ("" if it was not)."""
        tags = self._relist()
        why = self._holder(self._released(), target.digest)
        if not why and tags is not None:
            return ""
        why = why or "the release history kept changing while it was read again"
        fetched = self.reader.fetched(target.digest)
        if fetched is None:
            raise GpushipError(f"cannot put {target.digest} back: its manifest was never read")
        self.client.put_manifest(self.repo.at(target.digest), fetched.data, fetched.media_type)
        for tag in self._tags_released_at(target.digest):
            if self.client.head_manifest(self.repo.tag(tag)) is None:
                self.client.put_manifest(self.repo.tag(tag), fetched.data, fetched.media_type)
        return why

    def _relist(self) -> list[str] | None:
        """The tags now, after reading every history tag not seen before; None when intents
        kept vanishing between the list and their read (they are removed once complete)."""
        for _ in range(_RELIST_ATTEMPTS):
            try:
                tags = self.client.list_tags(self.repo)
            except NotFound:
                return []
            fresh = [t for t in tags if is_history_tag(self.prefix, t) and t not in self.seen]
            fresh = [t for t in fresh if t != self.prefix]
            read = read_each(partial(read_history_tag, self.client, self.repo, self.prefix), fresh)
            for tag, found in zip(fresh, read, strict=True):
                if found is not None:
                    self.seen.add(tag)
                    self._learn(found.record)
            if all(found is not None for found in read):
                return tags
        return None

    def _learn(self, record: ReleaseRecord) -> None:
        """Keep the last word on a release, read in any order (one list may hold them all):
        its complete record over its closing one (a release closed while it still ran
        completed all the same), either over its intent."""
        known = self.releases.get(record.id)
        if known is None or _RANK[record.state] > _RANK[known.state]:
            self.releases[record.id] = record

    def _released(self) -> dict[str, str]:
        """The digests releases claim (complete and unfinished ones, not abandoned ones): each
        one's own, and those it moved a floating tag from (a rollback returns there), each
        mapped to who claims it, as `_holder` words it."""
        claims: dict[str, str] = {}
        for record in self.releases.values():
            if record.state == "abandoned":
                continue
            who = f"release {record.id} ({_state(record)})"
            claims[record.digest] = f"{who} points at"
            for target in release_targets(record):
                if target.moved_from:
                    rollback = f"a rollback of {target.tag} past {who} returns to"
                    claims.setdefault(target.digest, rollback)
        return claims

    def _tags_released_at(self, digest: str) -> list[str]:
        """The tags complete records wrote to `digest` (never an intent's: see the module)."""
        return sorted(
            {
                change.tag
                for record in self.releases.values()
                if record.digest == digest and record.state == "complete"
                for change in record.tags
                if change.after == digest
            }
        )

    def _holder(self, roots: Mapping[str, str], digest: str) -> str:
        """Which root holds `digest` (itself, or by reference), as a reason; "" if none.
        `roots` maps a digest to who holds it, worded up to the digest ("tag T now points at")."""
        if digest in roots:
            return f"{roots[digest]} it"
        for root, who in roots.items():
            if digest in self.reader.reachable(root):
                return f"{who} {root[:19]}, which refers to it"
        return ""


_RANK = {"intent": 0, "abandoned": 1, "complete": 2}


def _state(record: ReleaseRecord) -> str:
    return "under way or interrupted" if record.state == "intent" else "recorded since the plan"


def claims_at_plan(
    client: RegistryClient,
    repo: Repository,
    prefix: str,
    reader: ContentReader,
    tags: Iterable[str],
    unfinished: Iterable[ReleaseRecord],
) -> Claims:
    """The claims as the plan saw them: its history tags, and the unfinished releases."""
    seen = {tag for tag in tags if is_history_tag(prefix, tag)}
    releases = {record.id: record for record in unfinished}
    return Claims(client, repo, prefix, reader, seen, releases)
