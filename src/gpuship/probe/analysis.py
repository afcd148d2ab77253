"""From trials to what an image did: step figures (pooled and per trial), overload, GPU peak,
cold start, queues at their peak and the slowest requests."""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from gpuship.http.load import Sample
from gpuship.nvml.sampler import GpuSample
from gpuship.probe.config import ProbeConfig, SloConfig
from gpuship.probe.metrics import StepMetrics, step_metrics
from gpuship.probe.run import LOAD, RECOVERY, SHORTAGE, Trial
from gpuship.probe.schedule import Step

# Log lines that say a process ran out of GPU memory: PyTorch's allocator, the CUDA runtime's
# error name, cuBLAS failing to allocate its workspace, and TensorFlow's allocator.
OOM_PATTERN = re.compile(
    r"CUDA out of memory|cudaErrorMemoryAllocation|OutOfMemoryError|"
    r"CUBLAS_STATUS_ALLOC_FAILED|out of memory trying to allocate",
    re.IGNORECASE,
)
_LOG_LINES = 5


@dataclass(frozen=True)
class Overload:
    """What the shortage step did to one trial."""

    behaviour: str  # crashed | errors | shed | absorbed
    detail: str
    oom_lines: tuple[str, ...]
    shortage: StepMetrics
    recovered: bool
    recovery: StepMetrics | None


@dataclass(frozen=True)
class SlowRequest:
    """One of the slowest requests of the load steps (any outcome: a timeout is slow too)."""

    trial: int  # from 1
    step: str
    start: float  # intended send, seconds from the start of its trial's load
    latency: float
    status: int
    error: str


@dataclass(frozen=True)
class QueueAndStart:
    """Over an image's trials: cold starts, model loads, queue peaks under the load steps
    (client side: holding a slot, waiting for one; the server's own gauge), slowest requests."""

    cold_starts: tuple[float | None, ...]  # one per trial that started
    cold_start_failure: str | None
    model_loads: tuple[float | None, ...]
    peak_in_flight: int
    peak_waiting: int
    server_metric: str | None
    server_peak: float | None
    server_unknown: str | None  # why the server's queue is unknown
    slowest: tuple[SlowRequest, ...]

    @property
    def cold_start(self) -> float | None:
        """The longest cold start; None when any trial's is unknown."""
        known = [s for s in self.cold_starts if s is not None]
        return max(known) if known and len(known) == len(self.cold_starts) else None

    @property
    def model_load(self) -> float | None:
        known = [s for s in self.model_loads if s is not None]
        return max(known) if known else None


@dataclass(frozen=True)
class ImageFigures:
    """Everything measured about one image over its trials."""

    role: str
    image: str
    steps: tuple[StepMetrics, ...]
    per_trial: tuple[tuple[StepMetrics, ...], ...]
    overloads: tuple[Overload, ...]
    start_failures: tuple[str, ...]
    peak_memory_fraction: float | None
    peak_process_bytes: int | None
    gpu_error: str | None
    log_tail: tuple[str, ...]
    queue: QueueAndStart

    @property
    def measured(self) -> bool:
        return bool(self.per_trial)


def image_figures(
    role: str, trials: Sequence[Trial], steps: Sequence[Step], config: ProbeConfig
) -> ImageFigures:
    """Pool the trials of one image (`trials` all have this role)."""
    slo = config.slo
    ran = [trial for trial in trials if trial.start_failure is None]
    per_trial = tuple(
        tuple(_step(trial, index, step, slo) for index, step in enumerate(steps)) for trial in ran
    )
    pooled = tuple(
        step_metrics(
            Step(step.name, step.rate, step.duration * max(len(ran), 1)),
            [s for trial in ran for s in _load_samples(trial, index)],
            slo,
        )
        for index, step in enumerate(steps)
    )
    samples = [sample for trial in ran for sample in _load_gpu_samples(trial)]
    fractions = [s.used_bytes / s.total_bytes for s in samples if s.total_bytes]
    processes = [s.process_bytes for s in samples if s.process_bytes is not None]
    errors = [trial.gpu_error for trial in ran if trial.gpu_error]
    return ImageFigures(
        role=role,
        image=trials[0].image,
        steps=pooled if ran else (),
        per_trial=per_trial,
        overloads=tuple(o for trial in ran if (o := overload(trial, slo)) is not None),
        start_failures=tuple(_start_failure(t) for t in trials if t.start_failure is not None),
        peak_memory_fraction=max(fractions) if fractions else None,
        peak_process_bytes=max(processes) if processes else None,
        gpu_error=errors[0] if errors else (None if samples or not ran else "no GPU readings"),
        log_tail=tuple(_tail(trials[-1].log)),
        queue=queue_and_start(ran, steps, config),
    )


def queue_and_start(
    ran: Sequence[Trial], steps: Sequence[Step], config: ProbeConfig
) -> QueueAndStart:
    """Cold start, model load, queue peaks and slowest requests of the trials that started."""
    firsts = [trial.first_response for trial in ran]
    failure = next((f.failure for f in firsts if f is not None and f.failure), None)
    loads = [trial.phase(LOAD) for trial in ran]
    metric, peak, unknown = _server_peak(ran)
    return QueueAndStart(
        cold_starts=tuple(None if f is None else f.seconds for f in firsts),
        cold_start_failure=failure,
        model_loads=tuple(trial.model_load_s for trial in ran),
        peak_in_flight=max((p.queue.peak_in_flight for p in loads if p), default=0),
        peak_waiting=max((p.queue.peak_waiting for p in loads if p), default=0),
        server_metric=metric,
        server_peak=peak,
        server_unknown=unknown,
        slowest=_slowest(ran, steps, config.slowest_requests),
    )


def _server_peak(ran: Sequence[Trial]) -> tuple[str | None, float | None, str | None]:
    """(metric, its peak over the load steps of every trial, why unknown)."""
    traces = [trial.server for trial in ran if trial.server is not None]
    if not traces:
        return None, None, "not read"
    metric = next((trace.metric for trace in traces if trace.metric), None)
    peaks = [trace.peaks[LOAD][1] for trace in traces if LOAD in trace.peaks]
    if metric is None or len(peaks) < len(ran):
        errors = [trace.error for trace in traces if trace.error]
        url = traces[0].url
        why = errors[0] if errors else f"{url} exposes none of {', '.join(traces[0].names)}"
        return metric, None, why
    return metric, max(peaks), None


def _slowest(ran: Sequence[Trial], steps: Sequence[Step], count: int) -> tuple[SlowRequest, ...]:
    """The `count` slowest requests of the load steps: heapq.nlargest keeps only `count`
    of them while it reads every sample, however many there are."""
    found = heapq.nlargest(count, _load_requests(ran), key=lambda pair: pair[1].latency)
    return tuple(
        SlowRequest(
            trial=trial.index + 1,
            step=steps[sample.step].name,
            start=sample.intended,
            latency=sample.latency,
            status=sample.status,
            error=sample.error,
        )
        for trial, sample in found
    )


def _load_requests(ran: Sequence[Trial]) -> Iterator[tuple[Trial, Sample]]:
    for trial in ran:
        phase = trial.phase(LOAD)
        if phase is not None:
            yield from ((trial, s) for s in phase.result.samples if s.step >= 0)


def _load_gpu_samples(trial: Trial) -> list[GpuSample]:
    """GPU samples taken while the load steps ran: the shortage fills memory on purpose, so
    headroom is judged on normal load (the shortage's own peak is in its samples)."""
    phase = trial.phase(LOAD)
    if phase is None:
        return []
    start, end = phase.result.origin, phase.result.origin + phase.result.duration
    return [s for s in trial.gpu if start <= s.at <= end]


def _load_samples(trial: Trial, step_index: int) -> list[Sample]:
    phase = trial.phase(LOAD)
    return [s for s in phase.result.samples if s.step == step_index] if phase else []


def _step(trial: Trial, index: int, step: Step, slo: SloConfig) -> StepMetrics:
    return step_metrics(step, _load_samples(trial, index), slo)


def overload(trial: Trial, slo: SloConfig) -> Overload | None:
    """Classify the shortage: crashed, errors other than rejections, clean shedding, absorbed."""
    push = trial.phase(SHORTAGE)
    if push is None:
        return None
    figures = step_metrics(push.steps[0], push.result.samples, slo)
    calm = trial.phase(RECOVERY)
    recovery = step_metrics(calm.steps[0], calm.result.samples, slo) if calm else None
    state = push.state_after
    oom_lines = tuple(line.strip() for line in trial.log.splitlines() if OOM_PATTERN.search(line))
    alive = state.running and (calm is None or calm.state_after.running)
    recovered = alive and recovery is not None and recovery.error_rate <= slo.error_rate
    if not alive:
        final = state if not state.running or calm is None else calm.state_after
        behaviour, detail = "crashed", _crash_detail(final.exit_code, final.oom_killed, oom_lines)
    elif figures.errors > figures.rejected:
        kinds = ", ".join(f"{kind} x{n}" for kind, n in figures.error_kinds)
        behaviour, detail = "errors", f"failed requests: {kinds}"
    elif figures.rejected:
        behaviour, detail = "shed", f"rejected {figures.rejected} of {figures.count} requests"
    else:
        behaviour, detail = "absorbed", f"served all {figures.count} requests"
    return Overload(behaviour, detail, oom_lines[:_LOG_LINES], figures, recovered, recovery)


def _crash_detail(exit_code: int | None, oom_killed: bool, oom_lines: Sequence[str]) -> str:
    parts = [f"exited {exit_code}" if exit_code is not None else "stopped answering"]
    if oom_killed:
        parts.append("killed by the host's OOM killer")
    if oom_lines:
        parts.append(f"log: {oom_lines[-1][:200]}")
    return "; ".join(parts)


def _start_failure(trial: Trial) -> str:
    state = trial.final_state
    code = f" (exit code {state.exit_code})" if state and state.exit_code is not None else ""
    tail = " | ".join(_tail(trial.log)[-3:])
    return f"{trial.start_failure}{code}" + (f": {tail}" if tail else "")


def _tail(log: str) -> list[str]:
    lines = [line.rstrip() for line in log.splitlines() if line.strip()]
    return lines[-_LOG_LINES:]
