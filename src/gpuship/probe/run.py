"""One probe run: candidate (and stable) trials, each load, shortage and recovery, sampled.

The world is reached through what the caller passes in: `launch(image)` starts an image and
yields a running target (the Docker adapter, or a fixed URL), `sample` watches the GPUs
(the NVML adapter), `drive` sends load (the HTTP adapter). Trials alternate candidate and
stable (C S C S ...), so slow drift of the runner (clocks, temperature, other jobs) falls on
both images alike and pairs of trials can be compared.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol

from gpuship.docker.service import ContainerState, NotReady
from gpuship.http.load import Arrival, LoadResult, RequestSpec, Target
from gpuship.nvml.sampler import GpuSample
from gpuship.probe.config import ProbeConfig
from gpuship.probe.schedule import Step, arrivals

LOAD, SHORTAGE, RECOVERY = "load", "shortage", "recovery"


class Running(Protocol):
    """A started target: where to send load (host, port), and what can be seen of it."""

    address: tuple[str, int]

    def state(self) -> ContainerState: ...

    def logs(self) -> str: ...

    def pids(self) -> frozenset[int] | None: ...


class GpuWatch(Protocol):
    samples: list[GpuSample]
    error: str | None


Launch = Callable[[str], AbstractContextManager[tuple[Running, float]]]
Sample = Callable[[Callable[[], frozenset[int] | None]], AbstractContextManager[GpuWatch]]
Drive = Callable[[Target, Sequence[Arrival], Sequence[RequestSpec], int], LoadResult]


@dataclass(frozen=True)
class Phase:
    """One generator run: its steps and every sample."""

    name: str
    steps: tuple[Step, ...]
    result: LoadResult
    state_after: ContainerState


@dataclass(frozen=True)
class Trial:
    """One image run once: start-up, phases, GPU samples, and how it ended."""

    role: str
    image: str
    index: int
    startup_s: float | None
    phases: tuple[Phase, ...]
    gpu: tuple[GpuSample, ...]
    gpu_error: str | None
    log: str
    start_failure: str | None = None
    final_state: ContainerState | None = None

    def phase(self, name: str) -> Phase | None:
        return next((phase for phase in self.phases if phase.name == name), None)


@dataclass(frozen=True)
class Workload:
    """The requests and the steps of each phase, fixed before the first trial."""

    requests: tuple[RequestSpec, ...]
    shortage_requests: tuple[RequestSpec, ...]
    load_steps: tuple[Step, ...]


def load_steps(config: ProbeConfig) -> tuple[Step, ...]:
    return tuple(
        Step(f"{step.rate:g}/s", step.rate, step.duration_s) for step in config.profile.steps
    )


def run_trials(
    images: Sequence[tuple[str, str]],
    config: ProbeConfig,
    workload: Workload,
    launch: Launch,
    sample: Sample,
    drive: Drive,
    progress: Callable[[str], None],
) -> list[Trial]:
    """`config.compare.trials` rounds; in each, every (role, image) once, in order."""
    trials = []
    rounds = config.compare.trials if len(images) > 1 else 1
    for index in range(rounds):
        for role, image in images:
            progress(f"{role} {image}: trial {index + 1} of {rounds}")
            trials.append(_trial(role, image, index, config, workload, launch, sample, drive))
    return trials


def _trial(
    role: str,
    image: str,
    index: int,
    config: ProbeConfig,
    workload: Workload,
    launch: Launch,
    sample: Sample,
    drive: Drive,
) -> Trial:
    try:
        with launch(image) as (running, startup_s), sample(running.pids) as watch:
            phases = tuple(_phases(running, config, workload, drive))
            return Trial(
                role=role,
                image=image,
                index=index,
                startup_s=startup_s,
                phases=phases,
                gpu=tuple(watch.samples),
                gpu_error=watch.error,
                log=running.logs(),
                final_state=running.state(),
            )
    except NotReady as failure:
        return Trial(
            role=role,
            image=image,
            index=index,
            startup_s=None,
            phases=(),
            gpu=(),
            gpu_error=None,
            log=failure.log,
            start_failure=failure.reason,
            final_state=failure.state,
        )


def _phases(
    running: Running, config: ProbeConfig, workload: Workload, drive: Drive
) -> Iterator[Phase]:
    profile = config.profile
    target = Target(*running.address)
    schedule = arrivals(
        workload.load_steps,
        profile.arrival,
        profile.seed,
        len(workload.requests),
        profile.warmup_s,
    )
    load = drive(target, schedule, workload.requests, profile.concurrency)
    yield Phase(LOAD, workload.load_steps, load, running.state())
    shortage = config.shortage
    if not shortage.enabled:
        return
    push = (Step("shortage", shortage.rate, shortage.duration_s),)
    schedule = arrivals(push, profile.arrival, profile.seed, len(workload.shortage_requests))
    result = drive(target, schedule, workload.shortage_requests, shortage.concurrency)
    yield Phase(SHORTAGE, push, result, running.state())
    time.sleep(shortage.cooldown_s)
    calm = (Step("recovery", shortage.recovery_rate, shortage.recovery_duration_s),)
    schedule = arrivals(calm, profile.arrival, profile.seed, len(workload.requests))
    result = drive(target, schedule, workload.requests, profile.concurrency)
    yield Phase(RECOVERY, calm, result, running.state())
