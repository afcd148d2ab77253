"""Job mode: run the image's own command (a few training steps) to the end and watch it.

Reports peak GPU memory (NVML, sampled while it runs), time per step from its log when
`probe.job.step-pattern` is given, and whether it ran out of memory (CUDA out-of-memory in
its log, or killed by the host's OOM killer), timed out or failed.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from gpuship.docker.engine import Engine
from gpuship.docker.service import ContainerState, running_service
from gpuship.errors import ConfigError
from gpuship.nvml.sampler import GpuSample, sampling
from gpuship.probe import rules
from gpuship.probe.analysis import OOM_PATTERN
from gpuship.probe.config import ProbeConfig
from gpuship.probe.result import JobResult
from gpuship.probe.servers import group_seconds
from gpuship.probe.stats import percentile
from gpuship.report import Finding, Report, Severity, Table
from gpuship.report.catalog import rules_by_id


@dataclass(frozen=True)
class JobRun:
    """What the job did: how it ended, how long it took, its log, the GPU samples."""

    image: str
    state: ContainerState | None
    seconds: float
    log: str
    gpu: tuple[GpuSample, ...]
    gpu_error: str | None


def run_job(
    image: str, config: ProbeConfig, environ: Mapping[str, str], progress: Callable[[str], None]
) -> Report:
    """Start the image's command, wait for it (or the timeout), judge it."""
    from gpuship.probe.session import service_spec

    # A job serves nothing: it gets no published port (host network only when asked).
    network = "host" if config.target.network == "host" else "none"
    spec = service_spec(image, config.target, network)
    progress(f"job {image}: running for at most {config.job.timeout_s:g} s")
    started = time.monotonic()
    with (
        Engine.connect(environ) as engine,
        running_service(engine, spec, uuid.uuid4().hex[:12]) as service,
    ):
        with sampling(config.sample_interval_ms / 1000, service.pids) as watch:
            state = service.wait_exit(config.job.timeout_s)
        run = JobRun(
            image=image,
            state=state,
            seconds=time.monotonic() - started,
            log=service.logs(timestamps=config.job.step_pattern is not None),
            gpu=tuple(watch.samples),
            gpu_error=watch.error,
        )
    return job_report(run, config)


def step_times(log: str, pattern: str) -> list[float]:
    """Seconds per step: from the pattern's `ms` or `s` group, else between matching lines.

    Lines start with the engine's timestamp (`docker logs --timestamps`).
    """
    try:
        regex = re.compile(pattern)
    except re.error as error:
        raise ConfigError(f"probe.job.step-pattern: not a regular expression: {error}") from None
    times: list[float] = []
    previous: float | None = None
    for line in log.splitlines():
        stamp, _, text = line.partition(" ")
        match = regex.search(text)
        if match is None:
            continue
        seconds = group_seconds(match)
        if seconds is not None:
            times.append(seconds)
        else:
            at = _timestamp(stamp)
            if previous is not None and at is not None:
                times.append(at - previous)
            previous = at
    return times


def _timestamp(text: str) -> float | None:
    # Docker writes nanoseconds; datetime takes microseconds.
    match = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)$", text)
    if match is None:
        return None
    fraction = (match.group(2) or ".0")[:7]
    zone = "+00:00" if match.group(3) == "Z" else match.group(3)
    return datetime.fromisoformat(match.group(1) + fraction + zone).timestamp()


def job_report(run: JobRun, config: ProbeConfig) -> Report:
    """Findings and tables of a job run."""
    oom_lines = [line.strip() for line in run.log.splitlines() if OOM_PATTERN.search(line)]
    findings = list(_job_findings(run, oom_lines, config))
    times = step_times(run.log, config.job.step_pattern) if config.job.step_pattern else []
    peak = max((s.used_bytes / s.total_bytes for s in run.gpu if s.total_bytes), default=None)
    peak_bytes = max((s.used_bytes for s in run.gpu), default=None)
    ordered = sorted(times)
    rows = [
        ("image", run.image),
        ("ended", _ended(run.state)),
        ("seconds", f"{run.seconds:.1f}"),
        ("peak GPU memory", "unknown" if peak is None else f"{peak:.1%} ({peak_bytes} bytes)"),
        ("steps", str(len(times)) if config.job.step_pattern else "no step-pattern"),
    ]
    if ordered:
        rows.append(("time per step p50", f"{percentile(ordered, 0.5) * 1000:.1f} ms"))
        rows.append(("time per step max", f"{ordered[-1] * 1000:.1f} ms"))
    failed = any(f.severity is Severity.ERROR for f in findings)
    reason = findings[0].message if findings else ""
    return Report(
        command="probe",
        findings=findings,
        result=JobResult(
            mode="job",
            verdict="fail" if failed else "ok",
            reason=reason,
            exit_code=None if run.state is None else run.state.exit_code,
            seconds=round(run.seconds, 3),
            oom_lines=tuple(oom_lines[:5]),
            peak_gpu_memory_fraction=peak,
            step_seconds=tuple(round(t, 6) for t in times),
            gpu=tuple((round(s.at - run.gpu[0].at, 3), s.gpu, s.used_bytes) for s in run.gpu),
        ),
        rules=rules_by_id(rules.RULES),
        tables=[Table("Job", ("", "value"), tuple(rows))],
        outputs={
            "verdict": "fail" if failed else "ok",
            "reason": reason,
            "peak-gpu-memory": "" if peak is None else f"{peak:.3f}",
            "steps": str(len(times)),
        },
        failed=failed,
        headline=f"job {run.image}: " + (reason or "ran to the end"),
        subject=run.image,
    )


def _ended(state: ContainerState | None) -> str:
    if state is None:
        return "still running at the timeout (stopped)"
    text = f"exit code {state.exit_code}"
    return text + (", killed by the host's OOM killer" if state.oom_killed else "")


def _job_findings(run: JobRun, oom_lines: Sequence[str], config: ProbeConfig) -> list[Finding]:
    found = []
    state = run.state
    if oom_lines or (state is not None and state.oom_killed):
        what = oom_lines[-1][:300] if oom_lines else "killed by the host's OOM killer"
        found.append(Finding(rules.JOB_OOM, Severity.ERROR, f"ran out of memory: {what}"))
    if state is None:
        message = f"still running after {config.job.timeout_s:g} s; stopped"
        found.append(Finding(rules.JOB_TIMEOUT, Severity.ERROR, message))
    elif state.exit_code != 0 and not found:
        tail = " | ".join(line for line in run.log.splitlines()[-3:] if line.strip())
        found.append(Finding(rules.JOB_FAILED, Severity.ERROR, f"exited {state.exit_code}: {tail}"))
    if run.gpu_error:
        found.append(
            Finding(rules.GPU_UNKNOWN, Severity.WARNING, f"GPU readings unknown: {run.gpu_error}")
        )
    return found
