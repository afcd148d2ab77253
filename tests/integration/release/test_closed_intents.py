"""Unfinished releases are closed, by appending, once nothing of them is left, against the real
docker-registry: a release undone where the registry refuses manifest DELETE (as GHCR through
the registry API and ECR do), and an interrupted promote whose tags later releases took over.
A closed release is listed as abandoned, is never resumed, and protects nothing.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone

import pytest
from release_images import RunCli, candidate_image, stable_and_candidate, tag_digest

from bed import faults
from bed.oci import push
from bed.registry import Registry
from gpuship.reference import Repository
from gpuship.registry.client import RegistryClient
from gpuship.release.config import ReleaseConfig
from gpuship.release.history import History, explain, intent_tag, load_history
from gpuship.release.policy import TagKind, TagRequest
from gpuship.release.promote import ReleaseOutcome, ReleaseRequest, release, remove_tag

pytestmark = pytest.mark.integration

HISTORY_TAG = "gpuship.releases"
ENVIRON = {"GPUSHIP_REGISTRIES__ATTEMPTS": "1", "GPUSHIP_REGISTRIES__REQUEST_TIMEOUT": "2"}


def _history(client: RegistryClient, repo: Repository) -> History:
    return load_history(client, repo, HISTORY_TAG)


def test_an_undone_release_is_closed_where_the_registry_deletes_no_manifests(
    registry: Registry, run_cli: RunCli
):
    """The release writes stable, then finds 3.0.0 created by another writer: it puts stable
    back and is over. Every DELETE is refused, so its intent cannot be removed; before, it
    stayed UNFINISHED forever (its digest protected from prune, the same promote resuming
    it). Now its abandoned record closes it."""
    repo, old, new = stable_and_candidate(registry.url, registry.host, "closed/undone")
    other = push(registry.url, repo.name, candidate_image("closed/undone-other"))
    client = RegistryClient(environ={})
    wrote: set[str] = set()

    def hook(index: int, method: str, path: str) -> str | None:
        if method == "DELETE":
            return "500"
        if path.endswith("/manifests/3.0.0"):
            if method == "PUT":
                wrote.add("3.0.0")
            elif method == "GET" and wrote:  # its read-back: another writer got there
                fetched = client.get_manifest(repo.at(other))
                client.put_manifest(repo.tag("3.0.0"), fetched.data, fetched.media_type)
        return None

    with faults.start(registry.host, hook=hook) as proxy:
        source = f"{proxy.host}/{repo.name}@{new}"
        run = run_cli("promote", source, "--tag", "3.0.0", "--move", "stable", environ=ENVIRON)
    assert run.code == 1, run
    result = run.report["result"]
    assert result["record_state"] == "none", result  # before: "intent"
    assert tag_digest(client, repo, "stable") == old
    assert {e["tag"]: e["result"] for e in result["tags"]} == {
        "stable": "restored",
        "3.0.0": "left alone",
    }
    release_id = result["record"]["id"]
    history = _history(client, repo)
    assert history.unfinished == [] and history.records == []
    assert [r.id for r in history.abandoned] == [release_id]
    # The intent is still there (the DELETE was refused), paired with its closing record.
    assert tag_digest(client, repo, intent_tag(HISTORY_TAG, release_id)) is not None
    shown = run_cli("history", str(repo))
    assert shown.code == 0 and "1 abandoned" in shown.report["headline"], shown
    assert "unfinished" not in shown.report["headline"]
    assert [r["state"] for r in shown.report["result"]["records"]] == ["abandoned"]
    # The same promote again is a new release, not the abandoned one resumed.
    remove_tag(client, repo, "3.0.0")
    again = run_cli("promote", f"{repo}@{new}", "--tag", "3.0.0", "--move", "stable")
    assert again.code == 0, again
    assert again.report["result"]["record"]["id"] != release_id
    assert "completing" not in again.report["headline"]


def test_a_stopped_promote_is_not_resumed_after_a_later_release_and_is_closed(
    registry: Registry, run_cli: RunCli
):
    """A promote writes every tag, then the registry goes away as it stores its record: its
    intent stays. `rollback stable` undoes its move of stable; 3.0.0 and canary still hold
    what it wrote, so it stays unfinished. The same promote run again must not resume it
    (its record would sort before the rollback, with the stopped run's time and actor): a
    new release, which takes over every tag of the stopped one and closes it."""
    repo, old, new = stable_and_candidate(registry.url, registry.host, "closed/superseded")
    client = RegistryClient(environ={})

    def hook(index: int, method: str, path: str) -> str | None:
        record = f"/manifests/{HISTORY_TAG}." in path and not path.endswith(".intent")
        return "gone" if method == "PUT" and record else None

    promote = ["--tag", "3.0.0", "--move", "stable", "--move", "canary"]
    with faults.start(registry.host, hook=hook) as proxy:
        stopped = run_cli("promote", f"{proxy.host}/{repo.name}@{new}", *promote, environ=ENVIRON)
    assert stopped.code == 3, stopped
    (intent,) = _history(client, repo).unfinished
    back = run_cli("rollback", f"{repo}:stable")
    assert back.code == 0 and back.report["result"]["record"]["rollback_of"] == intent.id, back
    # 3.0.0 and canary are still the stopped promote's: it stays unfinished.
    assert [r.id for r in _history(client, repo).unfinished] == [intent.id]
    again = run_cli("promote", f"{repo}@{new}", *promote)
    assert again.code == 0, again
    record = again.report["result"]["record"]
    assert record["id"] != intent.id and "completing" not in again.report["headline"]
    history = _history(client, repo)
    assert history.unfinished == [] and [r.id for r in history.abandoned] == [intent.id]
    assert [r.id for r in history.records] == [back.report["result"]["record"]["id"], record["id"]]
    assert (tag_digest(client, repo, "stable"), tag_digest(client, repo, "3.0.0")) == (new, new)
    # rollback now goes back from the new release.
    assert run_cli("rollback", f"{repo}:stable").code == 0
    assert tag_digest(client, repo, "stable") == old


def test_rollback_of_an_interrupted_promote_closes_it(registry: Registry, run_cli: RunCli):
    """The registry goes away after the promote moved stable: only stable holds what it wrote.
    `rollback stable` takes stable over, so nothing of the promote is left: it is closed."""
    repo, old, new = stable_and_candidate(registry.url, registry.host, "closed/rolled-back")
    client = RegistryClient(environ={})

    def hook(index: int, method: str, path: str) -> str | None:
        return "gone" if method == "PUT" and path.endswith("/manifests/canary") else None

    with faults.start(registry.host, hook=hook) as proxy:
        source = f"{proxy.host}/{repo.name}@{new}"
        stopped = run_cli(
            "promote",
            source,
            "--tag",
            "3.0.0",
            "--move",
            "stable",
            "--move",
            "canary",
            environ=ENVIRON,
        )
    assert stopped.code == 3, stopped
    (intent,) = _history(client, repo).unfinished
    assert (tag_digest(client, repo, "stable"), tag_digest(client, repo, "3.0.0")) == (new, None)
    back = run_cli("rollback", f"{repo}:stable")
    assert back.code == 0, back
    assert tag_digest(client, repo, "stable") == old
    history = _history(client, repo)
    assert history.unfinished == [] and [r.id for r in history.abandoned] == [intent.id]


def test_a_release_closed_while_it_runs_keeps_its_complete_record(registry: Registry):
    """No registry tells a running release from a dead one, so a later release may close one
    that is still running. Here the later release (C: stable to another image) reads the
    running promote's (W's) intent, finds stable taken over and 3.0.0 not written, and closes
    it; its closing PUT is held until W has written 3.0.0 and stored its complete record.
    The complete record must survive the closing that lands after it: before, both went to
    the record tag and the closing one replaced it (W exited 0 with no record: the race in
    test_prune_races.py, `LOST RECORD`)."""
    repo, _, new = stable_and_candidate(registry.url, registry.host, "closed/live")
    other = push(registry.url, repo.name, candidate_image("closed/live-other"))
    client = RegistryClient(environ={})
    closing, written = threading.Event(), threading.Event()
    found: dict[str, str] = {}

    def hold_version(index: int, method: str, path: str) -> str | None:
        # W's PUT of 3.0.0 waits until C has decided to close W and sent its closing PUT.
        if method == "PUT" and path.endswith("/manifests/3.0.0"):
            closing.wait(timeout=30)
        return None

    def hold_closing(index: int, method: str, path: str) -> str | None:
        # C's closing record of W waits until W has stored its complete record.
        if method == "PUT" and found["w"] in path and not path.endswith(".intent"):
            closing.set()
            written.wait(timeout=30)
        return None

    def promote(host: str, digest: str, tags: tuple[TagRequest, ...]) -> ReleaseOutcome:
        with RegistryClient(environ={}) as own:
            through = Repository(host, repo.name)
            request = ReleaseRequest(through.at(digest), through, tags)
            return release(own, request, ReleaseConfig(), environ={}, now=_now())

    version = (TagRequest("3.0.0", TagKind.IMMUTABLE), TagRequest("stable", TagKind.FLOATING))
    with (
        faults.start(registry.host, hook=hold_version) as w_proxy,
        faults.start(registry.host, hook=hold_closing) as c_proxy,
        ThreadPoolExecutor(max_workers=1) as pool,
    ):
        running = pool.submit(promote, w_proxy.host, new, version)
        running.add_done_callback(lambda _: written.set())
        found["w"] = _wait_for_intent(client, repo)
        later = promote(c_proxy.host, other, (TagRequest("stable", TagKind.FLOATING),))
        shipped = running.result(timeout=60)
    assert shipped.succeeded and shipped.record_state == "stored", shipped.error
    assert later.succeeded and later.closed == [found["w"]], later.error
    assert tag_digest(client, repo, "3.0.0") == new
    history = _history(client, repo)
    assert found["w"] in [r.id for r in history.records]
    assert history.unfinished == [] and history.abandoned == []
    assert explain(history.records, "3.0.0", new) is not None


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _wait_for_intent(client: RegistryClient, repo: Repository) -> str:
    """The id of the first intent stored in `repo` (waits for it, 30 s at most)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        intents = [t for t in client.list_tags(repo) if t.endswith(".intent")]
        if intents:
            return intents[0].removeprefix(f"{HISTORY_TAG}.").removesuffix(".intent")
        time.sleep(0.02)
    raise AssertionError("the running release stored no intent")
