"""When each request is sent: constant or Poisson arrivals, step after step of a ramp.

The schedule is computed before the run, from a seed, so two images see the same load and
a rerun sees the same load again. Step -1 is warm-up: sent, never judged.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from gpuship.http.load import Arrival

WARMUP_STEP = -1


@dataclass(frozen=True)
class Step:
    """One load step: `rate` arrivals per second for `duration` seconds."""

    name: str
    rate: float
    duration: float


def arrivals(
    steps: Sequence[Step],
    process: str,
    seed: int,
    request_count: int,
    warmup: float = 0.0,
) -> list[Arrival]:
    """Arrival times for a warm-up at the first step's rate, then each step in turn.

    Requests cycle through the `request_count` requests of the request file, in order.
    """
    rng = random.Random(seed)  # noqa: S311 (a reproducible load, not a secret)
    plan = [(WARMUP_STEP, steps[0].rate, warmup)] if warmup > 0 and steps else []
    plan += [(index, step.rate, step.duration) for index, step in enumerate(steps)]
    result: list[Arrival] = []
    offset = 0.0
    for step_index, rate, duration in plan:
        for at in _step_times(rate, duration, process, rng):
            result.append(Arrival(offset + at, step_index, len(result) % request_count))
        offset += duration
    return result


def _step_times(rate: float, duration: float, process: str, rng: random.Random) -> list[float]:
    if process == "constant":
        count = int(rate * duration + 1e-9)
        return [index / rate for index in range(count)]
    times: list[float] = []
    at = rng.expovariate(rate)
    while at < duration:
        times.append(at)
        at += rng.expovariate(rate)
    return times
