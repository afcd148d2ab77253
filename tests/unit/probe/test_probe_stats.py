"""Percentiles, their distribution-free intervals, and paired ratios over trials."""

from __future__ import annotations

import math
import random

import pytest

from gpuship.probe.stats import paired_ratio, percentile, percentile_estimate, t_critical_95


def test_percentile_interpolates_like_numpy_default() -> None:
    # numpy.percentile([1, 2, 3, 4], [50, 90]) == [2.5, 3.7]
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == pytest.approx(2.5)
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.9) == pytest.approx(3.7)
    assert percentile([7.0], 0.99) == 7.0
    with pytest.raises(ValueError):
        percentile([], 0.5)


def test_interval_covers_the_true_percentile_about_95_percent_of_the_time() -> None:
    # Exponential(1): the true p99 is ln(100).
    rng = random.Random(7)
    true_p99 = math.log(100)
    covered = 0
    runs = 300
    for _ in range(runs):
        values = sorted(rng.expovariate(1.0) for _ in range(1000))
        estimate = percentile_estimate(values, 0.99)
        assert estimate.low is not None and estimate.high is not None
        covered += estimate.low <= true_p99 <= estimate.high
    assert 0.92 <= covered / runs <= 0.98


def test_too_few_samples_leave_a_bound_unknown() -> None:
    values = sorted(float(i) for i in range(100))
    estimate = percentile_estimate(values, 0.999)
    assert estimate.high is None
    assert estimate.low is not None
    # 380+ samples bound a p99 from both sides.
    assert percentile_estimate(sorted(float(i) for i in range(400)), 0.99).high is not None


def test_t_values_approach_the_normal_one() -> None:
    assert t_critical_95(1) == pytest.approx(12.706)
    assert t_critical_95(2) == pytest.approx(4.303)
    assert t_critical_95(200) == pytest.approx(1.96, abs=0.001)
    with pytest.raises(ValueError):
        t_critical_95(0)


def test_paired_ratio_is_geometric_mean_with_t_interval() -> None:
    ratio = paired_ratio([2.0, 2.2, 1.8], [1.0, 1.0, 1.0])
    assert ratio is not None and ratio.low is not None and ratio.high is not None
    logs = [math.log(2.0), math.log(2.2), math.log(1.8)]
    mean = sum(logs) / 3
    assert ratio.value == pytest.approx(math.exp(mean))
    sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / 2)
    assert ratio.low == pytest.approx(math.exp(mean - 4.303 * sd / math.sqrt(3)))
    assert ratio.low < ratio.value < ratio.high


def test_paired_ratio_without_interval_or_with_zero() -> None:
    one = paired_ratio([3.0], [1.5])
    assert one is not None and one.value == pytest.approx(2.0) and one.low is None
    assert paired_ratio([0.0, 1.0], [1.0, 1.0]) is None
