"""Faults at chosen moments between gpuship and the real registry (`bed.faults`): retries and
their limits, and what a release does when another writer moves its tags while it runs."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from release_images import RunCli, candidate_image, tag_digest

from bed import faults
from bed.oci import push
from bed.registry import Registry
from gpuship.errors import RegistryUnavailable
from gpuship.reference import Repository
from gpuship.registry.client import RegistryClient
from gpuship.registry.retry import RetryPolicy
from gpuship.release.history import load_history

pytestmark = pytest.mark.integration

FAST_RETRY = RetryPolicy(attempts=3, backoff_s=0.01, max_wait_s=0.05, timeout_s=5)
FAST_ENVIRON = {"GPUSHIP_REGISTRIES__ATTEMPTS": "3", "GPUSHIP_REGISTRIES__BACKOFF": "0.01"}
HISTORY_TAG = "gpuship.releases"


def _records(client: RegistryClient, repo: Repository) -> list[str]:
    return [record.id for record in load_history(client, repo, HISTORY_TAG).records]


def test_retry_after_is_honoured(registry: Registry):
    digest = push(registry.url, "rel/retry", candidate_image("retry-after"), tag="v1")
    with faults.start(registry.host, {0: "429"}, retry_after="1") as proxy:
        client = RegistryClient(environ={})
        started = time.monotonic()
        assert client.resolve_digest(Repository(proxy.host, "rel/retry").tag("v1")) == digest
        elapsed = time.monotonic() - started
    assert elapsed >= 1.0
    assert [request.fault for request in proxy.log] == ["429", "pass"]


def test_persistent_server_errors_are_registry_unavailable(registry: Registry):
    push(registry.url, "rel/down", candidate_image("down"), tag="v1")
    with faults.start(registry.host, dict.fromkeys(range(10), "429")) as proxy:
        client = RegistryClient(environ={}, retry=FAST_RETRY)
        with pytest.raises(RegistryUnavailable, match=r"HTTP 429.*Too Many Requests \(HAP429\)"):
            client.get_manifest(Repository(proxy.host, "rel/down").tag("v1"))
    assert proxy.count() == FAST_RETRY.attempts


def test_tag_listing_follows_link_pages(registry: Registry):
    image = candidate_image("pages")
    names = [f"t{n:02d}" for n in range(11)]
    for name in names:
        push(registry.url, "rel/pages", image, tag=name)
    with faults.start(registry.host, page_tags=3) as proxy:
        client = RegistryClient(environ={})
        repo = Repository(proxy.host, "rel/pages")
        assert client.list_tags(repo) == names
        assert client.list_tags(repo, page_size=2) == names
    listed = [request for request in proxy.log if "/tags/list" in request.path]
    assert len(listed) == 4 + 6  # 11 tags: 4 pages of 3, then 6 pages of 2


def test_answers_slower_than_the_timeout_are_retried(registry: Registry):
    digest = push(registry.url, "rel/slow", candidate_image("slow"), tag="v1")
    with faults.start(registry.host, {0: "stall"}, stall_s=1.5) as proxy:
        client = RegistryClient(
            environ={}, retry=RetryPolicy(attempts=3, backoff_s=0.01, timeout_s=0.5)
        )
        assert client.resolve_digest(Repository(proxy.host, "rel/slow").tag("v1")) == digest
    assert [request.fault for request in proxy.log][:2] == ["stall", "pass"]


def _on_request(method: str, marker: str, action: Callable[[], str | None]) -> faults.Hook:
    """A hook running `action` for requests `method` whose path contains `marker`."""

    def hook(index: int, seen_method: str, path: str) -> str | None:
        return action() if seen_method == method and marker in path else None

    return hook


def _moves_on_read(
    client: RegistryClient, repo: Repository, tag: str, digest: str, nth: int
) -> faults.Hook:
    """A hook: another writer points `tag` at `digest` on the `nth` GET of the tag (hooks run
    before the request is forwarded, so that GET already sees the move)."""
    reads: list[str] = []

    def hook(index: int, method: str, path: str) -> str | None:
        if method == "GET" and path.endswith(f"/manifests/{tag}"):
            reads.append(path)
            if len(reads) == nth:
                client.put_manifest(repo.tag(tag), *_bytes(client, repo, digest))
        return None

    return hook


def _setup(registry: Registry, name: str) -> tuple[Repository, str, str, str]:
    """stable at `old`; candidate `new` and another writer's `theirs` pushed untagged."""
    old = push(registry.url, name, candidate_image(f"{name}-old"), tag="stable")
    new = push(registry.url, name, candidate_image(f"{name}-new"))
    theirs = push(registry.url, name, candidate_image(f"{name}-theirs"))
    return Repository(registry.host, name), old, new, theirs


def test_failed_promote_steps_back_from_a_tag_another_writer_moved(
    registry: Registry, run_cli: RunCli
):
    repo, _, new, theirs = _setup(registry, "rel/step-back")
    direct = RegistryClient(environ={})
    moved: list[bool] = []

    def other_writer_then_fail() -> str:
        if not moved:  # another release moves stable while this one stores its record
            direct.put_manifest(repo.tag("stable"), *_bytes(direct, repo, theirs))
            moved.append(True)
        return "500"

    def hook(index: int, method: str, path: str) -> str | None:
        # The complete record's PUT (the intent, stored before any tag moves, passes).
        record_put = method == "PUT" and f"/manifests/{HISTORY_TAG}." in path
        return other_writer_then_fail() if record_put and not path.endswith(".intent") else None

    with faults.start(registry.host, hook=hook) as proxy:
        result = run_cli(
            "promote",
            f"{proxy.host}/{repo.name}@{new}",
            "--move",
            "stable",
            "--move",
            "canary",
            environ=FAST_ENVIRON,
        )
    assert result.code == 3, result  # the registry answered 500 to every record PUT
    assert tag_digest(direct, repo, "stable") == theirs  # left alone: not ours any more
    assert tag_digest(direct, repo, "canary") is None  # ours: removed again
    tags = {entry["tag"]: entry for entry in result.report["result"]["tags"]}
    assert tags["stable"]["result"] == "left alone"
    assert tags["stable"]["now"] == theirs
    assert tags["canary"]["result"] == "restored"
    assert result.report["result"]["record_state"] == "not stored"
    warning = [f for f in result.report["findings"] if f["rule"] == "GSR104"]
    assert len(warning) == 1 and theirs in warning[0]["message"]
    assert "SOME TAGS NOT RESTORED" not in result.report["headline"]
    assert _records(direct, repo) == []


def test_tag_moved_by_a_later_writer_is_reported_and_the_release_recorded(
    registry: Registry, run_cli: RunCli
):
    repo, _, new, theirs = _setup(registry, "rel/superseded")
    direct = RegistryClient(environ={})
    # The second read is the read-back right after this run's PUT.
    hook = _moves_on_read(direct, repo, "stable", theirs, 2)
    with faults.start(registry.host, hook=hook) as proxy:
        result = run_cli("promote", f"{proxy.host}/{repo.name}@{new}", "--move", "stable")
    assert result.code == 0, result
    assert tag_digest(direct, repo, "stable") == theirs
    entry = result.report["result"]["tags"][0]
    assert (entry["result"], entry["now"]) == ("superseded", theirs)
    assert [f["rule"] for f in result.report["findings"]] == ["GSR104"]
    assert _records(direct, repo) == [result.report["result"]["record"]["id"]]


def test_immutable_tag_created_by_someone_else_meanwhile_fails_and_restores(
    registry: Registry, run_cli: RunCli
):
    repo, old, new, theirs = _setup(registry, "rel/immutable-race")
    direct = RegistryClient(environ={})
    # The second read is the one right after this run stored its intent (its contest for the
    # new version tag, `release/contention.py`): it finds the tag taken and writes nothing.
    hook = _moves_on_read(direct, repo, "4.0.0", theirs, 2)
    with faults.start(registry.host, hook=hook) as proxy:
        result = run_cli(
            "promote", f"{proxy.host}/{repo.name}@{new}", "--tag", "4.0.0", "--move", "stable"
        )
    assert result.code == 1, result
    assert (
        f"immutable tag 4.0.0 was created at {theirs} meanwhile" in result.report["result"]["error"]
    )
    assert result.report["result"]["written"] == []
    assert tag_digest(direct, repo, "4.0.0") == theirs
    assert tag_digest(direct, repo, "stable") == old
    assert _records(direct, repo) == []


def test_record_stored_though_every_answer_to_it_was_lost(registry: Registry, run_cli: RunCli):
    repo, _, new, _ = _setup(registry, "rel/record-answer-lost")
    direct = RegistryClient(environ={})
    hook = _on_request("PUT", f"/manifests/{HISTORY_TAG}.", lambda: "reset-after")
    with faults.start(registry.host, hook=hook) as proxy:
        result = run_cli(
            "promote", f"{proxy.host}/{repo.name}@{new}", "--move", "stable", environ=FAST_ENVIRON
        )
    # Every PUT of the record landed and lost its answer; a read finds it: the release is
    # complete and says so (it used to end in "SOME TAGS NOT RESTORED").
    assert result.code == 0, result
    assert result.report["result"]["record_state"] == "stored"
    assert tag_digest(direct, repo, "stable") == new
    assert _records(direct, repo) == [result.report["result"]["record"]["id"]]


def test_rollback_decided_on_a_tag_that_moves_meanwhile_writes_nothing(
    registry: Registry, run_cli: RunCli
):
    repo, old, new, theirs = _setup(registry, "rel/rollback-race")
    direct = RegistryClient(environ={})
    assert run_cli("promote", f"{repo}@{new}", "--move", "stable").code == 0
    # The rollback reads stable (at `new`: its target is `old`); before its second read (the
    # release's own), another writer moves it.
    hook = _moves_on_read(direct, repo, "stable", theirs, 2)
    with faults.start(registry.host, hook=hook) as proxy:
        result = run_cli("rollback", f"{proxy.host}/{repo.name}:stable")
    assert result.code == 1, result
    assert "moved from" in result.report["result"]["error"]
    assert tag_digest(direct, repo, "stable") == theirs
    assert len(_records(direct, repo)) == 1
    assert old != theirs


def _bytes(client: RegistryClient, repo: Repository, digest: str) -> tuple[bytes, str]:
    fetched = client.get_manifest(repo.at(digest))
    return fetched.data, fetched.media_type


def test_tag_write_refused_on_retry_after_its_answer_was_lost_still_counts(
    registry: Registry, run_cli: RunCli
):
    # The first PUT lands and loses its answer; every retry is refused, as a registry that
    # holds tags immutable (ECR) refuses a second PUT. The tag reads as written: written.
    repo, _, new, _ = _setup(registry, "rel/immutable-retry")
    direct = RegistryClient(environ={})
    puts: list[str] = []

    def lost_then_refused() -> str:
        puts.append("5.0.0")
        return "reset-after" if len(puts) == 1 else "500"

    hook = _on_request("PUT", "/manifests/5.0.0", lost_then_refused)
    with faults.start(registry.host, hook=hook) as proxy:
        result = run_cli(
            "promote", f"{proxy.host}/{repo.name}@{new}", "--tag", "5.0.0", environ=FAST_ENVIRON
        )
    assert result.code == 0, result
    assert len(puts) == 3  # the lost one and two refused retries
    assert tag_digest(direct, repo, "5.0.0") == new
    assert _records(direct, repo) == [result.report["result"]["record"]["id"]]
