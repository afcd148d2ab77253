"""`prune --apply` beside promotes and a rollback of the same repository, against the real
registry made slow to delete (every DELETE of the prune held DELAY_S by `bed.faults`), ROUNDS
rounds: 0 shipped tags lost, every tag's digest put there by a recorded release, no release
left unfinished.

Each round has its own repository: `stable` at B, moved there from A by a recorded release
(A keeps only its candidate tag `sha-a`); candidates c0 (an image) and c1 (an index with an
attestation, as buildx pushes) tagged `sha-c0`, `sha-c1`, never released. Retention keeps no
`sha-*` tag, so prune plans to delete A, c0, c1 and c1's children. prune starts; a moment after
its first DELETE arrives (a different moment each round, so the releases meet each digest
before its check, between its check and its DELETE taking effect, and after), at once:
`promote c0 --tag 2.<N>.0 --move stable`, `promote c1 --tag 2.<N>.1 --move prod` and
`rollback stable` (to A). Every command is a real process.

Before the fix, prune re-read the planned tags once, before all deletes: 0 of 10 rounds ended
consistent, with `2.<N>.0`, `prod` and even `stable` deleted while promote had exited 0.
"""

from __future__ import annotations

import functools
import multiprocessing
import random
import threading
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

import pytest
from concurrency import Outcome, run_writer
from release_images import candidate_image, candidate_index, place_seeded, tag_digest

from bed import faults
from bed.oci import Image, Index
from bed.registry import Registry
from gpuship.reference import Repository
from gpuship.registry.client import RegistryClient
from gpuship.registry.manifest import ImageIndex, parse_manifest
from gpuship.release.config import ReleaseConfig
from gpuship.release.history import explain, load_history
from gpuship.release.policy import TagKind, TagRequest
from gpuship.release.promote import ReleaseRequest, release

pytestmark = pytest.mark.integration

ROUNDS = 100
PARALLEL = 3  # rounds at once (each: 4 processes, mostly waiting on the slow deletes)
DELAY_S = 0.4
# The releases start this long (at most; a different wait each round) after prune's first
# DELETE: A's delete is in flight then, c0's and c1's checks and deletes follow DELAY_S apart.
JITTER_S = 0.5
HISTORY_TAG = "gpuship.releases"
CONFIG = """
release:
  retention:
    keep:
      - pattern: "sha-.*"
        newest: 0
"""
# What each writer may end with: 0; a rollback refused because the tag moved or the history
# could not yet explain it (1, 2); a release whose candidate prune deleted before it started
# (2). Never 3 or 4, never a traceback.
ALLOWED = {"prune": {0}, "promote0": {0, 2}, "promote1": {0, 2}, "rollback": {0, 1, 2}}


@pytest.fixture(scope="module")
def pool() -> Iterator[ProcessPoolExecutor]:
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=4 * PARALLEL, mp_context=context) as workers:
        yield workers


def test_prune_beside_promotes_and_rollbacks_loses_no_shipped_tag(
    registry: Registry, pool: ProcessPoolExecutor, tmp_path: Path
):
    config = tmp_path / "gpuship.yaml"
    config.write_text(CONFIG)
    with RegistryClient(environ={}) as client:  # seed once, before the rounds run in threads
        for kind in ("a", "b", "c0", "c1"):
            place_seeded(
                client, registry.url, Repository(registry.host, "race/seed"), _image(kind), None
            )
    play = functools.partial(_round, registry, pool, str(config))
    with ThreadPoolExecutor(max_workers=PARALLEL) as rounds:
        results = list(rounds.map(play, range(ROUNDS)))
    problems = [f"round {n}: {p}" for n, (found, _) in enumerate(results) for p in found]
    tally: Counter[str] = sum((counts for _, counts in results), Counter())
    summary = f"{ROUNDS} rounds, deletes held {DELAY_S} s: " + ", ".join(
        f"{key} {value}" for key, value in sorted(tally.items())
    )
    print(summary)
    assert not problems, summary + "\n" + "\n".join(problems[:30])
    # The rounds raced for real: prune met releases at their digests, before its deletes and
    # after them, and still deleted what nobody claimed.
    assert tally["prune skipped a claimed digest"] > 0, summary
    assert tally["prune deleted"] > 0, summary
    assert tally["release shipped a digest prune planned to delete"] > 0, summary


def _round(
    registry: Registry, pool: ProcessPoolExecutor, config: str, number: int
) -> tuple[list[str], Counter[str]]:
    client = RegistryClient(environ={})
    name = f"race/r{number}"
    repo = Repository(registry.host, name)
    first = place_seeded(client, registry.url, repo, _image("a"), "sha-a")
    _release(client, repo, first)
    second = place_seeded(client, registry.url, repo, _image("b"), "sha-b")
    _release(client, repo, second)
    c0 = place_seeded(client, registry.url, repo, _image("c0"), "sha-c0")
    c1 = place_seeded(client, registry.url, repo, _image("c1"), "sha-c1")
    deleting = threading.Event()
    with faults.start(registry.host, hook=_slow_deletes(deleting)) as proxy:
        argv = ["--config", config, "prune", f"{proxy.host}/{name}", "--apply"]
        prune = pool.submit(run_writer, "prune", argv)
        if not deleting.wait(timeout=60):
            return [f"prune sent no DELETE: {prune.result().stderr}"], Counter()
        threading.Event().wait(random.Random(number).uniform(0, JITTER_S))
        base = ["--config", config]
        writers = {
            "promote0": [*base, "promote", f"{repo}@{c0}", "--tag", f"2.{number}.0"],
            "promote1": [*base, "promote", f"{repo}@{c1}", "--tag", f"2.{number}.1"],
            "rollback": [*base, "rollback", f"{repo}:stable"],
        }
        writers["promote0"] += ["--move", "stable"]
        writers["promote1"] += ["--move", "prod"]
        futures = [pool.submit(run_writer, w, argv) for w, argv in writers.items()]
        outcomes = [prune.result(timeout=120)] + [f.result(timeout=120) for f in futures]
    try:
        return _judge(client, repo, number, outcomes), _counts(outcomes, {c0, c1, first})
    finally:
        client.close()


def _slow_deletes(deleting: threading.Event) -> faults.Hook:
    """Hold every DELETE DELAY_S before it reaches the registry; set `deleting` at the first."""

    def hook(index: int, method: str, path: str) -> str | None:
        if method != "DELETE":
            return None
        deleting.set()
        return "delay"

    return hook


def _judge(client: RegistryClient, repo: Repository, number: int, outcomes: list[Outcome]):
    problems = [
        f"{o.name}: exit {o.code}: {o.stderr.strip()[-400:]} {_errors(o)}"
        for o in outcomes
        if o.code not in ALLOWED[o.name] or "Traceback" in o.stderr
    ]
    history = load_history(client, repo, HISTORY_TAG)
    if history.unfinished:
        problems.append(f"unfinished releases left: {[r.id for r in history.unfinished]}")
    ids = {record.id for record in history.records}
    for outcome in outcomes[1:]:
        if outcome.code == 0 and outcome.record_state == "stored":
            if outcome.record_id not in ids:
                problems.append(f"{outcome.name}: LOST RECORD {outcome.record_id}")
            problems += _shipped_tags_held(client, repo, outcome)
    for tag in ("stable", "prod", f"2.{number}.0", f"2.{number}.1"):
        problems += _history_explains(client, repo, history.records, tag)
    return problems


def _errors(outcome: Outcome) -> list[str]:
    findings = (outcome.report or {}).get("findings", [])
    return [f["message"] for f in findings if f["severity"] == "error"]


def _shipped_tags_held(client: RegistryClient, repo: Repository, outcome: Outcome) -> list[str]:
    """Every tag a release that exited 0 wrote is still there (a later writer may have moved
    a floating one; nobody may delete it), an immutable one at the released digest."""
    assert outcome.report is not None
    problems = []
    for entry in outcome.report["result"]["tags"]:
        found = tag_digest(client, repo, entry["tag"])
        if found is None:
            problems.append(f"{outcome.name} exited 0, yet its tag {entry['tag']} is LOST")
        elif entry["kind"] == "immutable" and found != entry["after"]:
            problems.append(f"{entry['tag']} at {found}, released as {entry['after']}")
    return problems


def _history_explains(client: RegistryClient, repo: Repository, records, tag: str) -> list[str]:
    """The tag's digest was put there by a recorded release, and its content is all there."""
    found = tag_digest(client, repo, tag)
    touched = [r.id for r in records if any(c.tag == tag for c in r.tags)]
    if found is None:
        return [f"{tag} is gone, yet releases {touched} recorded it"] if touched else []
    problems = []
    if explain(records, tag, found) is None:
        problems.append(f"{tag} at {found}: no recorded release put it there")
    fetched = client.get_manifest(repo.at(found))
    document = parse_manifest(fetched.data, fetched.media_type)
    if isinstance(document, ImageIndex):
        missing = [
            d.digest for d in document.manifests if client.head_manifest(repo.at(d.digest)) is None
        ]
        if missing:
            problems.append(f"{tag} at index {found}, whose children {missing} are GONE")
    return problems


def _counts(outcomes: list[Outcome], planned: set[str]) -> Counter[str]:
    """What happened in the round, for the summary and to show the race took place."""
    counts: Counter[str] = Counter(f"{o.name.rstrip('01')} exit {o.code}" for o in outcomes)
    prune = outcomes[0].report
    if prune is not None:
        result = prune["result"]
        counts["prune deleted"] += len(result["deleted"])
        counts["prune put back after its delete"] += len(result["restored"])
        counts["prune skipped a claimed digest"] += sum(
            "release" in why or "points at it" in why for why in result["skipped"].values()
        )
    for outcome in outcomes[1:]:
        if outcome.code != 0 or outcome.report is None:
            continue
        result = outcome.report["result"]
        if result["record"]["digest"] in planned:
            counts["release shipped a digest prune planned to delete"] += 1
        notes = [entry["note"] for entry in result["tags"]]
        counts["tag written again after a prune's delete"] += sum("prune" in n for n in notes)
    return counts


@functools.cache
def _image(kind: str) -> Image | Index:
    """The same content in every round's repository: set-up mounts its blobs."""
    if kind == "c1":
        return candidate_index("race-c1", 200, ("amd64",))
    return candidate_image(f"race-{kind}", 200)


def _release(client: RegistryClient, repo: Repository, digest: str) -> None:
    request = ReleaseRequest(repo.at(digest), repo, (TagRequest("stable", TagKind.FLOATING),))
    outcome = release(client, request, ReleaseConfig(), environ={}, now=datetime.now(timezone.utc))
    assert outcome.succeeded, outcome.error
