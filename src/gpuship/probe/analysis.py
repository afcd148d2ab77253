"""From trials to what an image did: step figures (pooled and per trial), overload, GPU peak."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from gpuship.http.load import Sample
from gpuship.nvml.sampler import GpuSample
from gpuship.probe.config import SloConfig
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

    @property
    def measured(self) -> bool:
        return bool(self.per_trial)


def image_figures(
    role: str, trials: Sequence[Trial], steps: Sequence[Step], slo: SloConfig
) -> ImageFigures:
    """Pool the trials of one image (`trials` all have this role)."""
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
    )


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
