"""What `prune --apply` does with a release it meets between its check and its DELETE, and
with releases left unfinished long ago, against the real docker-registry. The release is
staged at the exact moment by the deleter prune is given (its record or intent stored, then
the real DELETE sent), so each case is met every time.
"""

from __future__ import annotations

import shutil
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Literal

import pytest
from release_images import dated_image, tag_digest

from bed import faults
from bed.oci import push
from bed.registry import Registry
from gpuship.reference import Repository
from gpuship.registry.client import RegistryClient
from gpuship.release.config import ReleaseConfig
from gpuship.release.history import load_history, store_record
from gpuship.release.policy import TagAction, TagKind, TagRequest
from gpuship.release.promote import ReleaseOutcome, ReleaseRequest, release
from gpuship.release.prune import apply_prune, plan_prune, registry_deleter
from gpuship.release.record import ReleaseRecord, TagChange, new_release_id
from gpuship.release.rollback import rollback_request

pytestmark = pytest.mark.integration

PREFIX = "gpuship.releases"
NOW = datetime.now(timezone.utc)
# distribution v2.8 deletes a manifest in two acts (registry/handlers/manifests.go,
# DeleteManifest): its revision link, then, once it has read every tag's link
# (tagStore.Lookup), each tag pointing at it. This many more tags make that read last long
# enough (about 0.3 s here) for a client to read a tag and write it between the two acts.
FILLER_TAGS = 10_000


def _config(history_limit: int = 20) -> ReleaseConfig:
    return ReleaseConfig.model_validate(
        {
            "history-limit": history_limit,
            "retention": {"keep": [{"pattern": "sha-.*", "newest": 0}]},
        }
    )


def _release(
    repo: Repository,
    digest: str,
    state: Literal["intent", "complete"],
    when: datetime = NOW,
) -> ReleaseRecord:
    """A promote of `digest` creating 2.0.0 and prod."""
    changes = [
        TagChange(tag=tag, kind=kind, before=None, after=digest, action=TagAction.CREATE)
        for tag, kind in (("2.0.0", TagKind.IMMUTABLE), ("prod", TagKind.FLOATING))
    ]
    return ReleaseRecord(
        id=new_release_id(when),
        kind="promote",
        time=when,
        repository=str(repo),
        source=f"{repo}@{digest}",
        digest=digest,
        media_type="application/vnd.oci.image.manifest.v1+json",
        tags=changes,
        state=state,
    )


def _store(client: RegistryClient, repo: Repository, record: ReleaseRecord) -> None:
    fetched = client.get_manifest(repo.at(record.digest))
    subject = {
        "mediaType": fetched.media_type,
        "digest": fetched.digest,
        "size": len(fetched.data),
    }
    store_record(client, repo, PREFIX, record, subject)


@pytest.mark.parametrize("state", ["intent", "complete"])
def test_a_release_met_during_a_delete_gets_back_only_what_it_recorded(
    registry: Registry, state: Literal["intent", "complete"]
):
    """A release that claims the digest while its DELETE is under way: prune puts the
    manifest back. Its tags only for a complete record (the DELETE took them away): a release
    that is only an intent writes its own tags, or fails and puts them back, so prune never
    publishes them for it (it would leave 2.0.0 published with no record)."""
    name = f"claims/met-{state}"
    client = RegistryClient(environ={})
    repo = Repository(registry.host, name)
    candidate = push(registry.url, name, dated_image(f"{name}-c", "2026-01-01T00:00:00Z"), "sha-c")
    plan = plan_prune(client, repo, _config(), NOW)
    assert [d.digest for d in plan.to_delete] == [candidate]
    real = registry_deleter(client, repo)
    record = _release(repo, candidate, state)

    def deleter(digest: str, tags: tuple[str, ...]) -> None:
        # After prune's check: the release stores its intent (and nothing else yet), or has
        # written its tags and stored its record; then the DELETE lands.
        if state == "complete":
            for change in record.tags:
                fetched = client.get_manifest(repo.at(digest))
                client.put_manifest(repo.tag(change.tag), fetched.data, fetched.media_type)
        _store(client, repo, record)
        real(digest, tags)

    apply_prune(client, repo, plan, deleter)
    assert candidate in plan.restored and plan.deleted == [], plan
    assert f"release {record.id}" in plan.restored[candidate]
    assert client.head_manifest(repo.at(candidate)) is not None  # the release can complete
    written = {tag: tag_digest(client, repo, tag) for tag in ("2.0.0", "prod")}
    if state == "intent":
        assert written == {"2.0.0": None, "prod": None}
    else:
        assert written == {"2.0.0": candidate, "prod": candidate}
    assert tag_digest(client, repo, "sha-c") is None  # prune's own deletion stands


def test_every_unfinished_release_protects_its_digest_beyond_the_history_limit(
    registry: Registry,
):
    """history-limit bounds what is listed, never what is protected: an intent older than the
    newest N still names a digest prune must not delete."""
    name = "claims/old-intents"
    client = RegistryClient(environ={})
    repo = Repository(registry.host, name)
    digests = [
        push(registry.url, name, dated_image(f"{name}-{n}", "2026-01-01T00:00:00Z"), f"sha-{n}")
        for n in range(3)
    ]
    # Three promotes of the candidates, a day apart, each stopped after storing its intent.
    for age, digest in enumerate(reversed(digests)):
        _store(client, repo, _release(repo, digest, "intent", NOW - timedelta(days=age + 1)))
    plan = plan_prune(client, repo, _config(history_limit=1), NOW)
    assert plan.to_delete == [], [(d.digest, d.reason) for d in plan.digests]
    apply_prune(client, repo, plan, registry_deleter(client, repo))
    assert all(client.head_manifest(repo.at(d)) is not None for d in digests)


@pytest.mark.parametrize("when", ["before-its-check", "during-its-delete"])
def test_a_digest_a_release_moves_a_floating_tag_from_meanwhile_is_kept(
    registry: Registry, when: str
):
    """Issue #32 beside a release: after the plan, staging is put on the candidate outside
    gpuship, then a promote moves it on. Its record says staging was there: the digest is now
    a rollback target, so prune skips it (the release came before the check) or puts it back
    (the release came while its DELETE ran), and the rollback gets there."""
    name = f"claims/moved-from-{when}"
    client = RegistryClient(environ={})
    repo = Repository(registry.host, name)
    old = push(registry.url, name, dated_image(f"{name}-old", "2026-01-01T00:00:00Z"), "sha-old")
    new = push(registry.url, name, dated_image(f"{name}-new", "2026-01-02T00:00:00Z"))
    plan = plan_prune(client, repo, _config(), NOW)
    assert [d.digest for d in plan.to_delete] == [old]
    moves: list[str] = []

    def move_staging() -> None:
        fetched = client.get_manifest(repo.at(old))
        client.put_manifest(repo.tag("staging"), fetched.data, fetched.media_type)
        request = ReleaseRequest(repo.at(new), repo, (TagRequest("staging", TagKind.FLOATING),))
        outcome = release(client, request, _config(), environ={}, now=datetime.now(timezone.utc))
        assert outcome.succeeded, outcome.error
        moves.append(outcome.record.id)

    real = registry_deleter(client, repo)

    def deleter(digest: str, tags: tuple[str, ...]) -> None:
        if when == "during-its-delete":
            move_staging()
        real(digest, tags)

    if when == "before-its-check":
        move_staging()
    apply_prune(client, repo, plan, deleter)

    assert plan.deleted == [], plan
    why = plan.skipped.get(old) or plan.restored.get(old, "")
    assert f"a rollback of staging past release {moves[0]}" in why, plan
    assert client.head_manifest(repo.at(old)) is not None
    assert rollback_request(client, repo, "staging", None, _config()).source.digest == old


def test_a_tag_the_delete_takes_after_its_rewrite_is_written_again(registry: Registry):
    """Issue #32: in test_prune_races.py a promote exited 1 ("tag 2.N.0 still reads as
    nothing 10 s after it was written"), its intent left. The order, staged here: promote
    writes 2.0.0; prune's DELETE (checked before the promote's intent existed) removes the
    manifest; promote reads 2.0.0 back (404: its manifest is gone) and writes it again; the
    DELETE, which listed 2.0.0 among the tags pointing at the digest, then removes the tag.
    Before, a new tag that read as nothing after its one rewrite was taken for a registry
    showing it late: read for 10 s, then exit 1. Now it is written again, and the release
    completes (prune, finding its intent, puts the manifest back)."""
    name = "claims/untagged-after-rewrite"
    client = RegistryClient(environ={})
    repo = Repository(registry.host, name)
    candidate = push(registry.url, name, dated_image(f"{name}-c", "2026-01-01T00:00:00Z"), "sha-c")
    plan = plan_prune(client, repo, _config(), NOW)
    assert [d.digest for d in plan.to_delete] == [candidate]
    store = registry.root / "data/docker/registry/v2/repositories" / name / "_manifests"
    revision = store / "revisions/sha256" / candidate.removeprefix("sha256:") / "link"
    tag = store / "tags/2.0.0"
    written, manifest_gone, delete_over = threading.Event(), threading.Event(), threading.Event()
    puts: list[int] = []
    seen: list[str] = []  # the registry's storage at each held read of 2.0.0

    def hook(index: int, method: str, path: str) -> str | None:
        if not path.endswith("/manifests/2.0.0"):
            return None
        if method == "PUT":
            puts.append(index)
        elif len(puts) == 1:  # the read-back: sent once the DELETE has removed the manifest
            written.set()
            manifest_gone.wait(timeout=30)
            seen.append(f"read back: tag {tag.exists()}, manifest {revision.exists()}")
        elif len(puts) == 2 and not delete_over.is_set():  # after the rewrite
            delete_over.wait(timeout=30)
            seen.append(f"read again: tag {tag.exists()}, manifest {revision.exists()}")
        return None

    def promote(host: str) -> ReleaseOutcome:
        with RegistryClient(environ={}) as own:
            through = Repository(host, name)
            request = ReleaseRequest(
                through.at(candidate), through, (TagRequest("2.0.0", TagKind.IMMUTABLE),)
            )
            return release(own, request, _config(), environ={}, now=datetime.now(timezone.utc))

    real = registry_deleter(client, repo)
    running: list[Future[ReleaseOutcome]] = []
    with (
        faults.start(registry.host, hook=hook) as proxy,
        ThreadPoolExecutor(max_workers=2) as pool,
    ):

        def deleter(digest: str, tags: tuple[str, ...]) -> None:
            # After prune's check: the promote stores its intent and writes 2.0.0, then the
            # DELETE lands while its read-back waits.
            running.append(pool.submit(promote, proxy.host))
            assert written.wait(timeout=30), "the promote never read 2.0.0 back"
            fillers = _fill_tags(store / "tags", FILLER_TAGS)
            pool.submit(_wait_gone, revision, manifest_gone)
            try:
                real(digest, tags)
            finally:
                for filler in fillers:
                    shutil.rmtree(filler)
                delete_over.set()

        apply_prune(client, repo, plan, deleter)
        outcome = running[0].result(timeout=60)
    # The order took place: the read-back found the tag without its manifest; the DELETE
    # answered after the rewrite had landed, and took the tag away again.
    assert seen == ["read back: tag True, manifest False", "read again: tag False, manifest True"]
    assert outcome.succeeded and outcome.record_state == "stored", outcome.error
    assert tag_digest(client, repo, "2.0.0") == candidate
    history = load_history(client, repo, PREFIX)
    assert history.unfinished == [] and [r.id for r in history.records] == [outcome.record.id]
    assert candidate in plan.restored and plan.deleted == [], plan


def _fill_tags(tags: Path, count: int) -> list[Path]:
    """`count` more tags in the registry's storage, each pointing at no manifest."""
    made = []
    for n in range(count):
        current = tags / f"filler-{n}" / "current"
        current.mkdir(parents=True)
        (current / "link").write_text("sha256:" + "0" * 64)
        made.append(current.parent)
    return made


def _wait_gone(path: Path, gone: threading.Event) -> None:
    """Set `gone` once `path` no longer exists (30 s at most)."""
    deadline = time.monotonic() + 30
    while path.exists() and time.monotonic() < deadline:
        time.sleep(0.001)
    gone.set()
