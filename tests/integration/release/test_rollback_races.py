"""Two rollbacks of one tag requested at once, against the real registry: the one that started
before the other moved the tag writes nothing (before, it read the tag after the other's move
and undid it: both exited 0); `rollback --expect DIGEST` writes only where the tag is at
DIGEST."""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor

import pytest
from concurrency import run_writer
from release_images import RunCli, candidate_image, tag_digest

from bed import faults
from bed.oci import push
from bed.registry import Registry
from gpuship.reference import Repository
from gpuship.registry.client import RegistryClient

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def pool() -> Iterator[ProcessPoolExecutor]:
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=context) as workers:
        yield workers


def _three_releases(registry: Registry, run_cli: RunCli, name: str) -> tuple[str, str, str]:
    """stable moved x -> y -> z by two recorded promotes."""
    x = push(registry.url, name, candidate_image(f"{name}-x"), tag="stable")
    y = push(registry.url, name, candidate_image(f"{name}-y"))
    z = push(registry.url, name, candidate_image(f"{name}-z"))
    for digest in (y, z):
        assert run_cli("promote", f"{registry.host}/{name}@{digest}", "--move", "stable").code == 0
    return x, y, z


def test_a_rollback_started_before_another_moved_the_tag_writes_nothing(
    registry: Registry, run_cli: RunCli, pool: ProcessPoolExecutor
):
    name = "rollrace/two"
    _, y, z = _three_releases(registry, run_cli, name)
    first_list: list[int] = []

    def hold_after_first_list(index: int, method: str, path: str) -> str | None:
        """The slow rollback's first request is its tag list; everything after it waits
        while the quick rollback runs from start to end."""
        if not first_list and "/tags/list" in path:
            first_list.append(index)
            return None
        return "delay" if first_list and index == first_list[0] + 1 else None

    with faults.start(registry.host, hook=hold_after_first_list, delay_s=3.0) as slow:
        argv = ["rollback", f"{slow.host}/{name}:stable"]
        late = pool.submit(run_writer, "slow", argv)
        end = time.monotonic() + 60
        while len(slow.log) < 2:
            assert time.monotonic() < end
            time.sleep(0.02)
        quick = run_cli("rollback", f"{registry.host}/{name}:stable")
        held = late.result(timeout=120)
    client = RegistryClient(environ={})
    assert quick.code == 0, quick.report.get("headline")
    assert held.code == 1, (held.stderr, held.report and held.report["headline"])
    assert held.report is not None
    assert "after this rollback started" in held.report["result"]["error"]
    assert held.report["failed"] is True
    assert tag_digest(client, Repository(registry.host, name), "stable") == y
    assert z != y


def test_rollback_expect_writes_only_where_the_tag_is(registry: Registry, run_cli: RunCli):
    name = "rollrace/expect"
    x, y, z = _three_releases(registry, run_cli, name)
    repo = Repository(registry.host, name)
    client = RegistryClient(environ={})
    wrong = run_cli("rollback", f"{registry.host}/{name}:stable", "--expect", y)
    assert wrong.code == 1 and wrong.report["failed"] is True
    assert f"points at {z}, not at {y}" in wrong.report["result"]["error"]
    assert wrong.report["result"]["written"] == []
    assert tag_digest(client, repo, "stable") == z
    right = run_cli("rollback", f"{registry.host}/{name}:stable", "--expect", z)
    assert right.code == 0, right.report.get("headline")
    assert tag_digest(client, repo, "stable") == y
    bad = run_cli("rollback", f"{registry.host}/{name}:stable", "--expect", "latest")
    assert bad.code == 2 and "--expect latest: give a digest" in bad.stderr
    assert x != y
