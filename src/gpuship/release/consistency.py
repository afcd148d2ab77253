"""Reading a tag right after writing it, on registries that are only eventually consistent.

Replicated registries, a CDN in front of one and geo-replicated ACR answer a read of a tag
just written with what it held before (the old digest, or 404 for a new tag) for a while
(issue #36: about 0.6 s seen). A release that took that answer as final concluded that its
write was lost, or that another writer had moved the tag. So a read that still shows what the
tag held before this run's write is read again, with a growing pause, for up to
`release.consistency-window` seconds (and never past the command's deadline); any other answer
is final at once: the written digest, or a third one (another writer).

A tag can also read as nothing because a DELETE of its digest took it away: registry:2
(distribution v2.8, `DeleteManifest`) removes the manifest, then reads every tag and removes
each one pointing at it, so a tag written again between the two is taken too. The writer may
then ask for the tag to be written again at each read that finds nothing (`write_again`): the
same bytes, harmless where the registry only shows the tag late.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from gpuship.reference import Repository
from gpuship.registry.client import FetchedManifest, RegistryClient
from gpuship.registry.errors import NotFound

_FIRST_PAUSE_S = 0.05
_MAX_PAUSE_S = 1.0


def read_tag(client: RegistryClient, repo: Repository, tag: str) -> FetchedManifest | None:
    """What `tag` holds now, its digest checked against its bytes (None: no such tag)."""
    try:
        return client.get_manifest(repo.tag(tag))
    except NotFound:
        return None


def digest_of(fetched: FetchedManifest | None) -> str | None:
    """The digest of what was read (None: no such tag)."""
    return fetched.digest if fetched is not None else None


def read_after_write(
    client: RegistryClient,
    repo: Repository,
    tag: str,
    *,
    old: str | None,
    window: float,
    write_again: Callable[[], object] | None = None,
) -> FetchedManifest | None:
    """`tag` read after this run wrote over `old` (None: the tag did not exist): read again
    while it still reads `old`, for up to `window` seconds within the command's deadline;
    with `write_again`, also while it reads as nothing, each such read followed by
    `write_again()` (and a read of that write, if the window is over). Returns the last read;
    it may still be `old` or nothing (the write did not land, or the registry lags longer
    than the window)."""
    end = time.monotonic() + max(0.0, min(window, client.deadline.remaining()))
    pause = _FIRST_PAUSE_S
    while True:
        found = read_tag(client, repo, tag)
        left = end - time.monotonic()
        if found is None and write_again is not None:
            write_again()
            if left <= 0:
                return read_tag(client, repo, tag)  # the last word is a read of the rewrite
        elif digest_of(found) != old or left <= 0:
            return found
        time.sleep(min(pause, left))
        pause = min(pause * 2, _MAX_PAUSE_S)
