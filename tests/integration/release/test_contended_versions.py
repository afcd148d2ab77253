"""Two promotes of one version at different digests, against the real registry: exactly one
publishes it (the intents arbitrate: `release/contention.py`), the other fails having written
nothing, and `stable` and the version end on the same digest.

The race of issue #36: one job's PUT of `1.1.0` is held in flight (`bed.faults` `delay`) while
the other job runs from start to end; then it lands. Before, both exited 0 and `1.1.0`
changed digest after it was reported shipped.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor

import pytest
from concurrency import Outcome, run_writer
from release_images import RunCli, candidate_image, place_seeded, tag_digest

from bed import faults
from bed.oci import push
from bed.registry import Registry
from gpuship.reference import Repository
from gpuship.registry.client import RegistryClient
from gpuship.release.history import load_history

pytestmark = pytest.mark.integration

HISTORY_TAG = "gpuship.releases"
ROUNDS = 12


@pytest.fixture(scope="module")
def pool() -> Iterator[ProcessPoolExecutor]:
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=2, mp_context=context) as workers:
        yield workers


def _setup(registry: Registry, name: str) -> tuple[Repository, str, str, str]:
    old = push(registry.url, name, candidate_image(f"{name}-old"), tag="stable")
    first = push(registry.url, name, candidate_image(f"{name}-a"))
    second = push(registry.url, name, candidate_image(f"{name}-b"))
    return Repository(registry.host, name), old, first, second


def _held_version_put(path: str) -> bool:
    return path.endswith("/manifests/1.1.0")


def test_a_late_version_put_does_not_ship_a_second_digest(
    registry: Registry, run_cli: RunCli, pool: ProcessPoolExecutor
):
    name = "contend/late-put"
    repo, old, first, second = _setup(registry, name)

    def hold(index: int, method: str, path: str) -> str | None:
        return "delay" if method == "PUT" and _held_version_put(path) else None

    with faults.start(registry.host, hook=hold, delay_s=4.0) as slow:
        argv = ["promote", f"{slow.host}/{name}@{first}", "--tag", "1.1.0", "--move", "stable"]
        late = pool.submit(run_writer, "late", argv)
        _wait_for(lambda: any(r.method == "PUT" and _held_version_put(r.path) for r in slow.log))
        quick = run_cli(
            "promote", f"{registry.host}/{name}@{second}", "--tag", "1.1.0", "--move", "stable"
        )
        held = late.result(timeout=120)
    client = RegistryClient(environ={})
    version, stable = tag_digest(client, repo, "1.1.0"), tag_digest(client, repo, "stable")
    assert sorted([held.code, quick.code]) == [0, 1], (held.stderr, quick.report.get("headline"))
    assert (held.code, quick.code) == (0, 1)  # the held job stored its intent first: it wins
    assert version == stable == first
    assert "gives way" in quick.report["result"]["error"]
    assert quick.report["result"]["written"] == []
    records = load_history(client, repo, HISTORY_TAG)
    assert [r.digest for r in records.records] == [first]
    assert not records.unfinished
    assert [r.digest for r in records.abandoned] == [second]
    assert old != first


def test_promotes_of_one_version_at_once_publish_exactly_one(
    registry: Registry, pool: ProcessPoolExecutor
):
    client = RegistryClient(environ={})
    waited = 0
    for number in range(ROUNDS):
        name = f"contend/r{number}"
        repo = Repository(registry.host, name)
        place_seeded(client, registry.url, repo, candidate_image("contend-old", 200), "stable")
        digests = [
            place_seeded(client, registry.url, repo, candidate_image(f"contend-{n}", 200), None)
            for n in range(2)
        ]
        futures = [
            pool.submit(
                run_writer,
                f"p{n}",
                ["promote", f"{registry.host}/{name}@{d}", "--tag", "3.0.0", "--move", "stable"],
            )
            for n, d in enumerate(digests)
        ]
        outcomes: list[Outcome] = [future.result(timeout=180) for future in futures]
        codes = sorted(o.code for o in outcomes)
        assert codes == [0, 1], [
            (o.code, o.stderr, o.report and o.report["headline"]) for o in outcomes
        ]
        winner = next(o for o in outcomes if o.code == 0)
        shipped = winner.report["result"]["record"]["digest"] if winner.report else None
        assert tag_digest(client, repo, "3.0.0") == shipped
        assert tag_digest(client, repo, "stable") == shipped
        history = load_history(client, repo, HISTORY_TAG)
        assert [r.digest for r in history.records] == [shipped]
        assert not history.unfinished
        waited += any("published them first" in str(o.report) for o in outcomes)
    print(f"{ROUNDS} rounds; the earlier intent waited for the later one's word in {waited}")


def _wait_for(condition, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < end, "timed out waiting"
        time.sleep(0.05)
