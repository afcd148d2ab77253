"""Percentiles and their confidence intervals, and the ratio of two images' figures over trials.

- Percentiles interpolate linearly between order statistics (numpy's default, method 7 of
  Hyndman & Fan 1996), as vLLM's serving benchmark computes them with `np.percentile`.
- The 95 % interval of a percentile from one run is distribution-free: the order statistics
  at ranks n*p -/+ 1.96*sqrt(n*p*(1-p)) (normal approximation to the binomial count of samples
  below the true percentile; Conover, Practical Nonparametric Statistics, 3rd ed., §3.2).
  When a rank falls outside the samples, that bound is unknown (None): a p99.9 from 500
  requests has no upper bound, and the report says so rather than printing a number.
- Trials of candidate and stable alternate on the same runner, so pair i shares the runner's
  state at that time; the candidate/stable ratio of a figure is judged on the mean of the
  pairs' log ratios with a Student t interval (k-1 degrees of freedom), which carries the
  run-to-run noise that one run cannot show.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

Z_95 = 1.959964
# Two-sided 95 % critical values of Student's t for 1..30 degrees of freedom
# (NIST/SEMATECH e-Handbook of Statistical Methods, table 1.4.2.3, column 0.975).
_T_95 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


@dataclass(frozen=True)
class Estimate:
    """A figure with its 95 % interval; a bound is None when the data cannot give it."""

    value: float
    low: float | None
    high: float | None

    def as_dict(self, scale: float = 1.0, digits: int = 3) -> dict[str, float | None]:
        def fmt(x: float | None) -> float | None:
            return None if x is None else round(x * scale, digits)

        return {"value": fmt(self.value), "low": fmt(self.low), "high": fmt(self.high)}


def percentile(ordered: Sequence[float], p: float) -> float:
    """The p-quantile (0..1) of sorted values, interpolated linearly (numpy's default)."""
    if not ordered:
        raise ValueError("no values")
    position = (len(ordered) - 1) * p
    below = math.floor(position)
    above = min(below + 1, len(ordered) - 1)
    return ordered[below] + (ordered[above] - ordered[below]) * (position - below)


def percentile_estimate(ordered: Sequence[float], p: float) -> Estimate:
    """The p-quantile with its distribution-free 95 % interval (order statistics)."""
    n = len(ordered)
    spread = Z_95 * math.sqrt(n * p * (1 - p))
    low_rank = math.floor(n * p - spread)
    high_rank = math.ceil(n * p + spread)
    return Estimate(
        value=percentile(ordered, p),
        low=ordered[low_rank - 1] if low_rank >= 1 else None,
        high=ordered[high_rank - 1] if high_rank <= n else None,
    )


def t_critical_95(degrees: int) -> float:
    """Two-sided 95 % Student t critical value; the normal one past 30 degrees of freedom."""
    if degrees < 1:
        raise ValueError("at least one degree of freedom")
    return _T_95[degrees - 1] if degrees <= len(_T_95) else Z_95


def paired_ratio(candidate: Sequence[float], stable: Sequence[float]) -> Estimate | None:
    """Candidate/stable ratio over paired trials: geometric mean with a 95 % t interval.

    One pair gives the ratio without an interval (low = high = None); a zero figure gives None.
    """
    pairs = [(c, s) for c, s in zip(candidate, stable, strict=True) if c > 0 and s > 0]
    if not pairs or len(pairs) != len(candidate):
        return None
    logs = [math.log(c / s) for c, s in pairs]
    mean = sum(logs) / len(logs)
    if len(logs) == 1:
        return Estimate(math.exp(mean), None, None)
    variance = sum((x - mean) ** 2 for x in logs) / (len(logs) - 1)
    half = t_critical_95(len(logs) - 1) * math.sqrt(variance / len(logs))
    return Estimate(math.exp(mean), math.exp(mean - half), math.exp(mean + half))
