"""Arrival schedules: constant and Poisson, warm-up, steps back to back, reproducible."""

from __future__ import annotations

import itertools
import statistics

from gpuship.probe.schedule import WARMUP_STEP, Step, arrivals


def test_constant_arrivals_are_evenly_spaced_per_step() -> None:
    got = arrivals([Step("a", 10, 1), Step("b", 20, 0.5)], "constant", 1, request_count=3)
    assert [round(a.at, 6) for a in got[:3]] == [0.0, 0.1, 0.2]
    assert [a.step for a in got].count(0) == 10
    assert [a.step for a in got].count(1) == 10
    # The second step starts where the first ends.
    assert min(a.at for a in got if a.step == 1) == 1.0
    assert [a.request for a in got[:4]] == [0, 1, 2, 0]


def test_poisson_arrivals_have_the_rate_and_exponential_gaps() -> None:
    got = arrivals([Step("a", 200, 50)], "poisson", 5, request_count=1)
    assert 9500 < len(got) < 10500
    gaps = [b.at - a.at for a, b in itertools.pairwise(got)]
    # Exponential gaps: the standard deviation equals the mean.
    assert abs(statistics.stdev(gaps) / statistics.mean(gaps) - 1) < 0.05
    assert all(0 <= a.at < 50 for a in got)


def test_same_seed_same_load_and_warmup_comes_first() -> None:
    steps = [Step("a", 50, 2)]
    first = arrivals(steps, "poisson", 3, 1, warmup=1)
    assert first == arrivals(steps, "poisson", 3, 1, warmup=1)
    assert first != arrivals(steps, "poisson", 4, 1, warmup=1)
    warm = [a for a in first if a.step == WARMUP_STEP]
    assert warm and max(a.at for a in warm) < 1 <= min(a.at for a in first if a.step == 0)
