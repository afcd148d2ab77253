"""Several promotes and a rollback of one repository at once, against the real registry, 100
rounds: 0 lost records, 0 tags moved by a failed run, and the history explains every tag after
every round (so `rollback` can work from whatever state the writers left).

Each round: `stable` is at B (moved from A by a recorded release, A also holds `1.0.0`); then
at once: two promotes of fresh candidates (`--tag 2.<round>.<n> --move stable`), a rollback of
`stable`, and a promote that must be refused (`--tag 1.0.0`, which A holds). Every writer goes
through its own pass-through proxy (`bed.faults` with no fault) whose log shows the tags it
wrote.
"""

from __future__ import annotations

import functools
import multiprocessing
import re
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import ExitStack
from datetime import datetime, timezone

import pytest
from concurrency import Outcome, run_writer
from release_images import candidate_image, place_seeded

from bed import faults
from bed.oci import Image
from bed.registry import Registry
from gpuship.errors import GpushipError
from gpuship.reference import Repository
from gpuship.registry.client import RegistryClient
from gpuship.release.config import ReleaseConfig
from gpuship.release.history import explain, load_history
from gpuship.release.policy import TagKind, TagRequest
from gpuship.release.promote import ReleaseRequest, release
from gpuship.release.record import ReleaseRecord
from gpuship.release.rollback import rollback_target

pytestmark = pytest.mark.integration

ROUNDS = 100
WRITERS = 4
HISTORY_TAG = "gpuship.releases"
_TAG_PUT = re.compile(r"/manifests/([^/?]+)$")


@pytest.fixture(scope="module")
def pool() -> Iterator[ProcessPoolExecutor]:
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=WRITERS, mp_context=context) as workers:
        yield workers


def test_concurrent_promotes_and_rollbacks(registry: Registry, pool: ProcessPoolExecutor):
    client = RegistryClient(environ={})
    codes: Counter[tuple[str, int]] = Counter()
    superseded = 0
    problems: list[str] = []
    for number in range(ROUNDS):
        outcomes, puts = _round(registry, client, pool, number)
        repo = Repository(registry.host, f"conc/r{number}")
        problems += [f"round {number}: {p}" for p in _judge(client, repo, outcomes, puts)]
        codes.update((o.name.rstrip("0123456789"), o.code) for o in outcomes)
        superseded += sum(
            entry["result"] == "superseded"
            for o in outcomes
            if o.report
            for entry in o.report["result"]["tags"]
        )
    summary = f"{ROUNDS} rounds: exit codes {dict(sorted(codes.items()))}; {superseded} tags "
    summary += "superseded by a later writer"
    print(summary)
    assert not problems, summary + "\n" + "\n".join(problems[:30])
    # The rounds raced for real: somewhere a later writer moved a tag a promote had written,
    # or a rollback found its tag moved.
    assert superseded > 0 or codes[("rollback", 1)] + codes[("rollback", 2)] > 0, summary


def _round(
    registry: Registry, client: RegistryClient, pool: ProcessPoolExecutor, number: int
) -> tuple[list[Outcome], dict[str, list[str]]]:
    name = f"conc/r{number}"
    repo = Repository(registry.host, name)
    first = place_seeded(client, registry.url, repo, _image("a"), "stable")
    place_seeded(client, registry.url, repo, _image("a"), "1.0.0")
    second = place_seeded(client, registry.url, repo, _image("b"), None)
    _release(client, repo, second)
    fresh = [place_seeded(client, registry.url, repo, _image(f"c{n}"), None) for n in range(3)]
    assert first != second
    with ExitStack() as stack:
        proxies = [stack.enter_context(faults.start(registry.host)) for _ in range(WRITERS)]
        hosts = [proxy.host for proxy in proxies]
        promote = ["promote", "--move", "stable"]
        writers = {
            "promote0": [*promote, f"{hosts[0]}/{name}@{fresh[0]}", "--tag", f"2.{number}.0"],
            "promote1": [*promote, f"{hosts[1]}/{name}@{fresh[1]}", "--tag", f"2.{number}.1"],
            "rollback": ["rollback", f"{hosts[2]}/{name}:stable"],
            "refused": [*promote, f"{hosts[3]}/{name}@{fresh[2]}", "--tag", "1.0.0"],
        }
        futures = [pool.submit(run_writer, w, argv) for w, argv in writers.items()]
        outcomes = [future.result(timeout=120) for future in futures]
    puts = {
        outcome.name: [
            match.group(1)
            for request in proxy.log
            if request.method == "PUT" and (match := _TAG_PUT.search(request.path))
        ]
        for outcome, proxy in zip(outcomes, proxies, strict=True)
    }
    return outcomes, puts


def _judge(
    client: RegistryClient,
    repo: Repository,
    outcomes: list[Outcome],
    puts: dict[str, list[str]],
) -> list[str]:
    problems: list[str] = []
    records = load_history(client, repo, HISTORY_TAG).records
    ids = {record.id for record in records}
    for outcome in outcomes:
        if outcome.code not in (0, 1, 2) or "Traceback" in outcome.stderr:
            problems.append(f"{outcome.name}: exit {outcome.code}: {outcome.stderr.strip()}")
        elif outcome.code == 0:
            if outcome.record_state == "stored" and outcome.record_id not in ids:
                problems.append(f"{outcome.name}: LOST RECORD {outcome.record_id}")
        else:
            if outcome.record_id in ids:
                problems.append(f"{outcome.name} failed, yet its record is in the history")
            moved = [t for t in puts[outcome.name] if not t.startswith(f"{HISTORY_TAG}.")]
            if moved:
                problems.append(
                    f"{outcome.name} failed (exit {outcome.code}) after writing {moved}"
                )
    if not any(o.name == "refused" and o.code == 1 for o in outcomes):
        problems.append("the promote of an existing version tag was not refused")
    problems += _history_explains_tags(client, repo, records, outcomes)
    return problems


def _history_explains_tags(
    client: RegistryClient, repo: Repository, records: list[ReleaseRecord], outcomes: list[Outcome]
) -> list[str]:
    problems = []
    stable = client.resolve_digest(repo.tag("stable"))
    if explain(records, "stable", stable) is None:
        problems.append(f"stable at {stable}: no record put it there")
    try:
        rollback_target(records, "stable", stable, None)
    except GpushipError as error:
        problems.append(f"rollback cannot work from the final state: {error}")
    for outcome in outcomes:
        if outcome.code != 0 or outcome.report is None:
            continue
        for entry in outcome.report["result"]["tags"]:
            if entry["kind"] == "immutable":
                found = client.resolve_digest(repo.tag(entry["tag"]))
                if found != entry["after"]:
                    problems.append(f"{entry['tag']} at {found}, released as {entry['after']}")
    return problems


@functools.cache
def _image(kind: str) -> Image:
    """The same images in every round's repository: set-up mounts their blobs."""
    return candidate_image(f"concurrent-{kind}", 200)


def _release(client: RegistryClient, repo: Repository, digest: str) -> None:
    request = ReleaseRequest(repo.at(digest), repo, (TagRequest("stable", TagKind.FLOATING),))
    outcome = release(client, request, ReleaseConfig(), environ={}, now=datetime.now(timezone.utc))
    assert outcome.succeeded, outcome.error
