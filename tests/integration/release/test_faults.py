"""Fault injection between gpuship and the real registry (drops before and after the registry
applied a request, 500s, 429 + Retry-After, slow answers): after every promote each tag points
at its old or its new digest, never anything else, and the outcome says which."""

from __future__ import annotations

import time
from datetime import datetime, timezone

import pytest
from faultproxy import FaultPlan, fault_proxy
from release_images import candidate_image, candidate_index, dated_image

from bed.oci import push
from bed.registry import Registry
from gpuship.errors import GpushipError, RegistryUnavailable
from gpuship.registry.client import RegistryClient
from gpuship.registry.reference import Repository
from gpuship.registry.transport import RetryPolicy
from gpuship.release.config import ReleaseConfig
from gpuship.release.history import load_history
from gpuship.release.policy import TagKind, TagRequest
from gpuship.release.promote import ReleaseRequest, release
from gpuship.release.prune import apply_prune, plan_prune, registry_deleter

pytestmark = pytest.mark.integration

FAST_RETRY = RetryPolicy(attempts=3, backoff_s=0.01, max_wait_s=0.05, timeout_s=5)
CONFIG = ReleaseConfig()
NOW = datetime.now(timezone.utc)


def _tags(client: RegistryClient, repo: Repository, tags: list[str]) -> dict[str, str | None]:
    found = {}
    for tag in tags:
        head = client.head_manifest(repo.tag(tag))
        found[tag] = head.digest if head is not None else None
    return found


@pytest.mark.parametrize("seed", range(12))
def test_promote_under_faults_leaves_old_or_new(registry: Registry, seed: int):
    direct = RegistryClient(environ={})
    name = f"rel/faults-{seed}"
    repo = Repository(registry.host, name)
    old_digest = push(registry.url, name, candidate_image(f"old-{seed}"))
    new_digest = push(registry.url, name, candidate_index(f"new-{seed}"))
    floating = [TagRequest("stable", TagKind.FLOATING), TagRequest("prod", TagKind.FLOATING)]
    first = release(
        direct,
        ReleaseRequest(repo.at(old_digest), repo, tuple(floating)),
        CONFIG,
        environ={},
        now=NOW,
    )
    assert first.succeeded
    version = f"3.0.{seed}"
    requests = (
        *floating,
        TagRequest("canary", TagKind.FLOATING),
        TagRequest(version, TagKind.IMMUTABLE),
    )
    before = {"stable": old_digest, "prod": old_digest, "canary": None, version: None}
    cross = seed >= 8  # the last seeds promote into another repository (mounts, child PUTs)
    plan = FaultPlan(rate=0.3, seed=seed)
    with fault_proxy(registry.host, plan) as proxy_host:
        faulty = RegistryClient(environ={}, retry=FAST_RETRY)
        source = Repository(proxy_host, name).at(new_digest)
        target = Repository(proxy_host, f"{name}-pub" if cross else name)
        try:
            outcome = release(
                faulty, ReleaseRequest(source, target, requests), CONFIG, environ={}, now=NOW
            )
        except GpushipError:
            outcome = None  # failed while reading: nothing may have been written
    assert any(fault != "pass" for _, _, fault in plan.log), "the schedule injected no fault"
    target_repo = Repository(registry.host, f"{name}-pub" if cross else name)
    if cross:
        before = dict.fromkeys(before)
    now = _tags(direct, target_repo, list(before))
    for tag, digest in now.items():
        assert digest in (before[tag], new_digest), f"{tag} points at {digest} (seed {seed})"
    history = load_history(direct, target_repo, CONFIG.history_tag)
    if outcome is None:
        assert now == before
        return
    if outcome.succeeded:
        assert all(digest == new_digest for digest in now.values())
        assert history[-1].id == outcome.record.id
        return
    for tag in outcome.restored:
        assert now[tag] == before[tag]
    for step in outcome.steps:
        if step.tag not in outcome.unrestored:
            assert now[step.tag] == before[step.tag], (step.tag, outcome)
    if CONFIG.history_tag not in outcome.unrestored:
        assert all(record.id != outcome.record.id for record in history)


def test_prune_under_faults_deletes_only_selected(registry: Registry):
    direct = RegistryClient(environ={})
    name = "rel/prune-faults"
    repo = Repository(registry.host, name)
    images = {n: dated_image(f"pf-{n}", f"2026-0{n}-01T00:00:00Z") for n in range(1, 8)}
    for n, image in images.items():
        push(registry.url, name, image, tag=f"nightly-{n}")
    push(registry.url, name, images[1], tag="stable")
    config = ReleaseConfig.model_validate(
        {"retention": {"keep": [{"pattern": "nightly-.*", "newest": 2}]}}
    )
    selected = {images[n].digest for n in (2, 3, 4, 5)}
    kept = {
        "stable": images[1].digest,
        "nightly-1": images[1].digest,
        "nightly-6": images[6].digest,
        "nightly-7": images[7].digest,
    }
    plan = FaultPlan(rate=0.4, seed=99, faults=("drop-before", "drop-after", "500", "429"))
    with fault_proxy(registry.host, plan) as proxy_host:
        faulty = RegistryClient(environ={}, retry=FAST_RETRY)
        through = Repository(proxy_host, name)
        try:
            pruning = plan_prune(faulty, through, config, NOW)
        except GpushipError:
            pruning = None
        if pruning is not None:
            assert {d.digest for d in pruning.to_delete} == selected
            apply_prune(faulty, through, pruning, registry_deleter(faulty, through))
    assert _tags(direct, repo, list(kept)) == kept
    for n in (2, 3, 4, 5):
        gone = direct.head_manifest(repo.at(images[n].digest)) is None
        if pruning is not None and images[n].digest in pruning.deleted:
            assert gone
        if pruning is None:
            assert not gone


def test_retry_after_is_honoured(registry: Registry):
    image = candidate_image("retry-after")
    digest = push(registry.url, "rel/retry", image, tag="v1")
    plan = FaultPlan(rate=1.0, faults=("429",), retry_after="1", max_faults=1)
    with fault_proxy(registry.host, plan) as proxy_host:
        client = RegistryClient(environ={})
        started = time.monotonic()
        assert client.resolve_digest(Repository(proxy_host, "rel/retry").tag("v1")) == digest
        elapsed = time.monotonic() - started
    assert elapsed >= 1.0
    assert [fault for _, _, fault in plan.log] == ["429", "pass"]


def test_persistent_server_errors_are_registry_unavailable(registry: Registry):
    push(registry.url, "rel/down", candidate_image("down"), tag="v1")
    plan = FaultPlan(rate=1.0, faults=("429",))
    with fault_proxy(registry.host, plan) as proxy_host:
        client = RegistryClient(environ={}, retry=FAST_RETRY)
        with pytest.raises(RegistryUnavailable, match=r"HTTP 429.*Too Many Requests \(HAP429\)"):
            client.get_manifest(Repository(proxy_host, "rel/down").tag("v1"))
    assert len(plan.log) == FAST_RETRY.attempts


def test_tag_listing_follows_link_pages(registry: Registry):
    image = candidate_image("pages")
    names = [f"t{n:02d}" for n in range(11)]
    for name in names:
        push(registry.url, "rel/pages", image, tag=name)
    plan = FaultPlan(tag_page_size=3)
    with fault_proxy(registry.host, plan) as proxy_host:
        client = RegistryClient(environ={})
        repo = Repository(proxy_host, "rel/pages")
        assert client.list_tags(repo) == names
        assert client.list_tags(repo, page_size=2) == names
    listed = [path for method, path, _ in plan.log if "/tags/list" in path]
    assert len(listed) == 4 + 6  # 11 tags: 4 pages of 3, then 6 pages of 2


def test_answers_slower_than_the_timeout_are_retried(registry: Registry):
    digest = push(registry.url, "rel/slow", candidate_image("slow"), tag="v1")
    plan = FaultPlan(rate=1.0, faults=("slow",), slow_s=1.5, max_faults=1)
    with fault_proxy(registry.host, plan) as proxy_host:
        client = RegistryClient(
            environ={}, retry=RetryPolicy(attempts=3, backoff_s=0.01, timeout_s=0.5)
        )
        assert client.resolve_digest(Repository(proxy_host, "rel/slow").tag("v1")) == digest
    assert [fault for _, _, fault in plan.log][:2] == ["slow", "pass"]
