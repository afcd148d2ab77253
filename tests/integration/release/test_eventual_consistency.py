"""Registries that are only eventually consistent (replicated registries, a CDN in front of
one, geo-replicated ACR): a tag read right after its PUT answers 404 or the old digest for a
while (`bed.faults` `lag_s`). Promote and rollback retry such a read within
`release.consistency-window` before concluding anything, and a re-run that finds every tag
where a release said it would put it records that release."""

from __future__ import annotations

import time

import pytest
from release_images import RunCli, candidate_image, stable_and_candidate, tag_digest

from bed import faults
from bed.oci import push
from bed.registry import Registry
from gpuship.reference import Repository
from gpuship.registry.client import RegistryClient
from gpuship.release.history import load_history

pytestmark = pytest.mark.integration

HISTORY_TAG = "gpuship.releases"
# Release tags lag; the history's own tags do not (a registry replicates each tag alike, but
# the record tags are read by digest-checked GETs that a stale read cannot pass anyway).
RELEASE_TAGS = r"(?!gpuship\.releases).*"


@pytest.mark.parametrize("lag_s", [0.6, 2.0])
def test_promote_through_a_lagging_registry_succeeds_and_records(
    registry: Registry, run_cli: RunCli, lag_s: float
):
    name = f"lag/promote-{int(lag_s * 10)}"
    _, old, new = stable_and_candidate(registry.url, registry.host, name)
    with faults.start(registry.host, lag_s=lag_s) as proxy:
        result = run_cli(
            "promote", f"{proxy.host}/{name}@{new}", "--tag", "1.1.0", "--move", "stable"
        )
    assert result.code == 0, result.report.get("headline", result.stderr)
    assert "another writer" not in str(result.report)
    client = RegistryClient(environ={})
    repo = Repository(registry.host, name)
    assert tag_digest(client, repo, "stable") == new
    assert tag_digest(client, repo, "1.1.0") == new
    records = load_history(client, repo, HISTORY_TAG).records
    assert [(c.tag, c.before, c.after) for c in records[-1].tags] == [
        ("stable", old, new),
        ("1.1.0", None, new),
    ]


def test_a_lag_longer_than_the_window_is_recorded_by_the_rerun(registry: Registry, run_cli: RunCli):
    """The window (0.2 s here) is shorter than the lag (1.5 s): the run cannot tell a stale
    read from a lost write, so it fails; the re-run finds both tags where the release put them
    and records it, so rollback works."""
    name = "lag/rerun"
    _, old, new = stable_and_candidate(registry.url, registry.host, name)
    config = "release:\n  consistency-window: 0.2\n"
    with faults.start(registry.host, lag_s=1.5, lag_tags=RELEASE_TAGS) as proxy:
        args = ("promote", f"{proxy.host}/{name}@{new}", "--tag", "1.1.0", "--move", "stable")
        first = run_cli(*args, config=config)
    assert first.code != 0
    client = RegistryClient(environ={})
    repo = Repository(registry.host, name)
    rerun = run_cli(
        "promote", f"{registry.host}/{name}@{new}", "--tag", "1.1.0", "--move", "stable"
    )
    assert rerun.code == 0, rerun.report.get("headline", rerun.stderr)
    assert rerun.report["result"]["record_state"] == "stored"
    assert tag_digest(client, repo, "stable") == new
    back = run_cli("rollback", f"{registry.host}/{name}:stable")
    assert back.code == 0, back.report.get("headline", back.stderr)
    assert tag_digest(client, repo, "stable") == old


def test_rollback_through_a_lagging_registry(registry: Registry, run_cli: RunCli):
    name = "lag/rollback"
    _, old, new = stable_and_candidate(registry.url, registry.host, name)
    assert run_cli("promote", f"{registry.host}/{name}@{new}", "--move", "stable").code == 0
    with faults.start(registry.host, lag_s=0.6) as proxy:
        result = run_cli("rollback", f"{proxy.host}/{name}:stable")
    assert result.code == 0, result.report.get("headline", result.stderr)
    assert [tag["result"] for tag in result.report["result"]["tags"]] == ["written"]
    client = RegistryClient(environ={})
    assert tag_digest(client, Repository(registry.host, name), "stable") == old


def test_a_stale_read_is_served_by_the_proxy(registry: Registry):
    """The bed itself: a read within the lag gets the old digest, then the new one."""
    name = "lag/bed"
    first = push(registry.url, name, candidate_image("lag-bed-1"), tag="t")
    second = candidate_image("lag-bed-2")
    with faults.start(registry.host, lag_s=0.5) as proxy:
        push(f"http://{proxy.host}", name, second, tag="t")
        client = RegistryClient(environ={})
        repo = Repository(proxy.host, name)
        assert tag_digest(client, repo, "t") == first
        assert tag_digest(client, repo, "u") is None
        time.sleep(0.6)
        assert tag_digest(client, repo, "t") == second.digest
