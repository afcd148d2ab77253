"""Samples, phases and trials built from numbers, for the probe's pure tests."""

from __future__ import annotations

from collections.abc import Sequence

from gpuship.docker.service import ContainerState
from gpuship.http.load import LoadResult, Sample
from gpuship.limits import DEFAULT_LIMITS
from gpuship.nvml.sampler import GpuSample
from gpuship.probe.queue import client_queue
from gpuship.probe.run import LOAD, RECOVERY, SHORTAGE, Phase, Trial
from gpuship.probe.schedule import Step

RUNNING = ContainerState(running=True, exit_code=None, oom_killed=False)
CRASHED = ContainerState(running=False, exit_code=1, oom_killed=False)
SERIES_POINTS = DEFAULT_LIMITS.probe_series_max_points


def sample(
    latency: float,
    step: int = 0,
    at: float = 0.0,
    status: int = 200,
    error: str = "",
    lag: float = 0.0,
    ttft: float | None = None,
    tokens: int = 0,
) -> Sample:
    """A request intended at `at` that took `latency` seconds (from its intended send)."""
    return Sample(
        step=step,
        intended=at,
        dispatched=at + lag,
        sent=at + lag,
        first_byte=at + latency / 2,
        first_token=None if ttft is None else at + ttft,
        done=at + latency,
        status=status,
        error=error,
        tokens=tokens,
    )


def latencies(values: Sequence[float], step: int = 0, lag: float = 0.0) -> list[Sample]:
    return [
        sample(value, step=step, at=index * 0.01, lag=lag) for index, value in enumerate(values)
    ]


def phase(
    name: str, steps: Sequence[Step], samples: Sequence[Sample], after: ContainerState = RUNNING
) -> Phase:
    result = LoadResult(origin=100.0, duration=10.0, samples=tuple(samples))
    return Phase(name, tuple(steps), result, after, client_queue(result, SERIES_POINTS))


def trial(
    role: str,
    index: int,
    load: Sequence[Sample],
    steps: Sequence[Step],
    shortage: Sequence[Sample] | None = None,
    recovery: Sequence[Sample] | None = None,
    after_shortage: ContainerState = RUNNING,
    log: str = "",
    gpu: Sequence[GpuSample] = (),
) -> Trial:
    phases = [phase(LOAD, steps, load)]
    if shortage is not None:
        phases.append(phase(SHORTAGE, [Step("shortage", 50, 1)], shortage, after_shortage))
        phases.append(phase(RECOVERY, [Step("recovery", 5, 1)], recovery or [], after_shortage))
    return Trial(
        role=role,
        image=f"reg/app:{role}",
        index=index,
        startup_s=1.0,
        phases=tuple(phases),
        gpu=tuple(gpu),
        gpu_error=None,
        log=log,
        final_state=after_shortage,
    )


def gpu_sample(at: float, used_mib: int, total_mib: int = 1000) -> GpuSample:
    return GpuSample(at, 0, used_mib * 2**20, total_mib * 2**20, 50, 100000, 0, used_mib * 2**20)
