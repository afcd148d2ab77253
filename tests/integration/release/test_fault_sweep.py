"""Every request position x every fault kind over `promote`, `promote --to`, `rollback` and
`prune --apply`, each against a fresh repository behind its own fault proxy (`bed.faults`),
judged against the registry (`sweep.py`): 0 corrupted tags, 0 wrong reports, 0 wrong exit
codes.

The runs go to a pool of worker processes (the registry does most of the waiting); each
scenario's request count comes from a clean run first, so a command that starts sending more
requests is swept over all of them.
"""

from __future__ import annotations

import multiprocessing
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path

import pytest
from sweep import SCENARIOS, SWEPT, Case, Verdict, run_case

from bed.registry import Registry

pytestmark = pytest.mark.integration

WORKERS = 6


@pytest.fixture(scope="module")
def pool() -> Iterator[ProcessPoolExecutor]:
    """Worker processes (spawned: the test process runs threads) shared by the scenarios."""
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=WORKERS, mp_context=context) as workers:
        yield workers


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_every_fault_at_every_request(
    scenario: str, pool: ProcessPoolExecutor, registry: Registry, tmp_path: Path
):
    started = time.monotonic()
    run = partial(run_case, registry.host, registry.url, str(tmp_path))
    clean = pool.submit(run, Case(scenario, 0)).result()
    assert clean.problems == [], clean.problems
    cases = [
        Case(scenario, 1 + number, position, fault)
        for number, (position, fault) in enumerate(
            (position, fault) for position in range(clean.requests) for fault in SWEPT
        )
    ]
    verdicts: list[Verdict] = list(pool.map(run, cases, chunksize=2))
    bad = [v for v in verdicts if v.problems]
    summary = _summary(scenario, verdicts, clean.requests, time.monotonic() - started)
    print(summary)
    assert not bad, (
        summary
        + "\n"
        + "\n".join(
            f"#{v.case.position} {v.case.fault}: exit {v.code}: {v.problems}" for v in bad[:40]
        )
    )
    # The sweep is only worth something if the faults took effect.
    effective = Counter(v.case.fault for v in verdicts if v.effective)
    for fault in ("reset-before", "reset-after", "500", "429", "stall", "gone"):
        assert effective[fault] == clean.requests, (fault, effective)
    assert effective["truncated-manifest"] > 0
    assert effective["wrong-digest"] > 0


def _summary(scenario: str, verdicts: list[Verdict], requests: int, seconds: float) -> str:
    codes = Counter(v.code for v in verdicts)
    slowest = max(verdicts, key=lambda v: v.seconds)
    return (
        f"fault sweep of {scenario}: {len(verdicts)} runs ({requests} requests x "
        f"{len(SWEPT)} faults) in {seconds:.0f} s; "
        f"exit codes {dict(sorted(codes.items()))}; "
        f"{sum(v.effective for v in verdicts)} with the fault in effect; slowest run "
        f"{slowest.seconds:.1f} s (#{slowest.case.position} {slowest.case.fault}); "
        f"{sum(bool(v.problems) for v in verdicts)} with problems"
    )
