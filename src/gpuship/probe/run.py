"""One probe run: candidate (and stable) trials, each load, shortage and recovery, sampled.

The world is reached through what the caller passes in: `launch(image)` starts an image and
yields a running target (the Docker adapter, or a fixed URL), `sample` watches the GPUs
(the NVML adapter), `scrape` reads the server's own queue from its Prometheus endpoint, and
`drive` sends load (the HTTP adapter). Each trial first times the cold start: from
`docker start` to the first successful answer to the first request. Trials alternate candidate and
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
from gpuship.http.metrics import ServerTrace
from gpuship.nvml.sampler import GpuSample
from gpuship.probe.config import ProbeConfig
from gpuship.probe.metrics import REJECTION_STATUSES, error_kind
from gpuship.probe.queue import ClientQueue, client_queue
from gpuship.probe.schedule import WARMUP_STEP, Step, arrivals
from gpuship.probe.servers import model_load_seconds

LOAD, SHORTAGE, RECOVERY = "load", "shortage", "recovery"
# A server still starting refuses connections, resets them, or answers 503 (or 429): the first
# request is sent again after this pause; any other failure is its answer.
_RETRY_S = 0.2
_NOT_YET = frozenset({"connect", "reset", "timeout"})


class Running(Protocol):
    """A started target: where to send load (host, port), when it was started
    (`time.monotonic()` before `docker start`; None when someone else started it), and what
    can be seen of it."""

    address: tuple[str, int]

    @property
    def started(self) -> float | None: ...

    def state(self) -> ContainerState: ...

    def logs(self) -> str: ...

    def pids(self) -> frozenset[int] | None: ...


class GpuWatch(Protocol):
    samples: list[GpuSample]
    error: str | None


class ServerWatch(Protocol):
    def mark(self, phase: str) -> None: ...

    def trace(self) -> ServerTrace: ...


Launch = Callable[[str], AbstractContextManager[tuple[Running, float]]]
SampleGpus = Callable[[Callable[[], frozenset[int] | None]], AbstractContextManager[GpuWatch]]
Scrape = Callable[[Running], AbstractContextManager[ServerWatch]]
Drive = Callable[[Target, Sequence[Arrival], Sequence[RequestSpec], int], LoadResult]


@dataclass(frozen=True)
class FirstResponse:
    """Cold start: seconds from `docker start` to the first successful response, or why it is
    unknown."""

    seconds: float | None
    failure: str | None = None


@dataclass(frozen=True)
class Phase:
    """One generator run: its steps, every sample, and the client's queue over time."""

    name: str
    steps: tuple[Step, ...]
    result: LoadResult
    state_after: ContainerState
    queue: ClientQueue


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
    first_response: FirstResponse | None = None
    server: ServerTrace | None = None
    model_load_s: float | None = None

    def phase(self, name: str) -> Phase | None:
        return next((phase for phase in self.phases if phase.name == name), None)


@dataclass(frozen=True)
class Workload:
    """The requests and the steps of each phase, fixed before the first trial, and how many
    points each series over time keeps (limits.probe-series-max-points)."""

    requests: tuple[RequestSpec, ...]
    shortage_requests: tuple[RequestSpec, ...]
    load_steps: tuple[Step, ...]
    series_points: int


def load_steps(config: ProbeConfig) -> tuple[Step, ...]:
    return tuple(
        Step(f"{step.rate:g}/s", step.rate, step.duration_s) for step in config.profile.steps
    )


def run_trials(
    images: Sequence[tuple[str, str]],
    config: ProbeConfig,
    workload: Workload,
    launch: Launch,
    sample: SampleGpus,
    scrape: Scrape,
    drive: Drive,
    progress: Callable[[str], None],
) -> list[Trial]:
    """`config.compare.trials` rounds; in each, every (role, image) once, in order."""
    trials = []
    rounds = config.compare.trials if len(images) > 1 else 1
    for index in range(rounds):
        for role, image in images:
            progress(f"{role} {image}: trial {index + 1} of {rounds}")
            world = (launch, sample, scrape, drive)
            trials.append(_trial(role, image, index, config, workload, world))
    return trials


def _trial(
    role: str,
    image: str,
    index: int,
    config: ProbeConfig,
    workload: Workload,
    world: tuple[Launch, SampleGpus, Scrape, Drive],
) -> Trial:
    launch, sample, scrape, drive = world
    try:
        with (
            launch(image) as (running, startup_s),
            sample(running.pids) as watch,
            scrape(running) as server,
        ):
            first = first_response(running, workload, config, drive)
            phases = tuple(_phases(running, config, workload, drive, server))
            log = running.logs()
            return Trial(
                role=role,
                image=image,
                index=index,
                startup_s=startup_s,
                phases=phases,
                gpu=tuple(watch.samples),
                gpu_error=watch.error,
                log=log,
                final_state=running.state(),
                first_response=first,
                server=server.trace(),
                model_load_s=model_load_seconds(log, config.target.model_load_log),
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


def first_response(
    running: Running, workload: Workload, config: ProbeConfig, drive: Drive
) -> FirstResponse:
    """Send the first request until it succeeds (while the server is still starting), within
    probe.target.startup-timeout-s of `docker start`."""
    if running.started is None:
        return FirstResponse(None, "not measured: the server was started by someone else")
    target = Target(*running.address)
    deadline = running.started + config.target.startup_timeout_s
    first = (Arrival(0.0, WARMUP_STEP, 0),)
    while True:
        result = drive(target, first, workload.requests[:1], 1)
        answer = result.samples[0]
        if not answer.error:
            return FirstResponse(result.origin + answer.done - running.started)
        not_yet = answer.error in _NOT_YET or answer.status in REJECTION_STATUSES
        if not not_yet or time.monotonic() >= deadline:
            return FirstResponse(None, f"the first request failed: {error_kind(answer)}")
        time.sleep(_RETRY_S)


def _phases(
    running: Running, config: ProbeConfig, workload: Workload, drive: Drive, server: ServerWatch
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
    server.mark(LOAD)
    load = drive(target, schedule, workload.requests, profile.concurrency)
    server.mark("")
    yield _phase(LOAD, workload.load_steps, load, running.state(), workload)
    shortage = config.shortage
    if not shortage.enabled:
        return
    push = (Step("shortage", shortage.rate, shortage.duration_s),)
    schedule = arrivals(push, profile.arrival, profile.seed, len(workload.shortage_requests))
    server.mark(SHORTAGE)
    result = drive(target, schedule, workload.shortage_requests, shortage.concurrency)
    server.mark("")
    yield _phase(SHORTAGE, push, result, running.state(), workload)
    time.sleep(shortage.cooldown_s)
    calm = (Step("recovery", shortage.recovery_rate, shortage.recovery_duration_s),)
    schedule = arrivals(calm, profile.arrival, profile.seed, len(workload.requests))
    server.mark(RECOVERY)
    result = drive(target, schedule, workload.requests, profile.concurrency)
    server.mark("")
    yield _phase(RECOVERY, calm, result, running.state(), workload)


def _phase(
    name: str, steps: tuple[Step, ...], result: LoadResult, after: ContainerState, work: Workload
) -> Phase:
    return Phase(name, steps, result, after, client_queue(result, work.series_points))
