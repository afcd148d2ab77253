"""Turn a probe into the shared Report: findings, tables side by side, charts, every sample."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from gpuship.http.load import Sample
from gpuship.http.metrics import ServerTrace
from gpuship.nvml.sampler import GpuSample
from gpuship.probe import result as R
from gpuship.probe.analysis import ImageFigures, QueueAndStart
from gpuship.probe.gate import Comparison, GateCheck, GateStatus, verdict
from gpuship.probe.metrics import StepMetrics
from gpuship.probe.queue import ClientQueue
from gpuship.probe.rules import RULES
from gpuship.probe.run import LOAD, Phase, Trial
from gpuship.probe.stats import Estimate
from gpuship.report import Chart, Finding, Report, Series, Severity, Table
from gpuship.report.catalog import rules_by_id

_SEVERITY = {
    GateStatus.FAIL: Severity.ERROR,
    GateStatus.WARN: Severity.WARNING,
    GateStatus.NOTE: Severity.NOTE,
}
SAMPLE_FIELDS = (
    "step",
    "intended_ms",
    "dispatched_ms",
    "sent_ms",
    "first_byte_ms",
    "first_token_ms",
    "done_ms",
    "status",
    "error",
    "tokens",
    "itl_ms",
    "queued",
)
GPU_FIELDS = (
    "t_ms",
    "gpu",
    "used_bytes",
    "total_bytes",
    "utilization",
    "power_mw",
    "event_reasons",
    "process_bytes",
)
QUEUE_FIELDS = ("t_s", "in_flight", "waiting", "slowest_ms")
_CHART_POINTS = 60


def probe_report(
    command: str,
    results: Sequence[ImageFigures],
    checks: Sequence[GateCheck],
    comparisons: Sequence[Comparison],
    trials: Sequence[Trial],
) -> Report:
    """The report of a probe; `results[0]` is the candidate."""
    status = verdict(checks)
    reason = next((f"{c.subject}: {c.message}" for c in checks if c.status is GateStatus.FAIL), "")
    if not reason:
        reason = next(
            (f"{c.subject}: {c.message}" for c in checks if c.status is GateStatus.WARN), ""
        )
    candidate = results[0]
    headline = {
        GateStatus.OK: f"{candidate.image} passed the probe",
        GateStatus.WARN: f"{candidate.image} passed the probe, with warnings",
        GateStatus.FAIL: f"{candidate.image} failed the probe: {reason}",
    }[status]
    return Report(
        command=command,
        findings=[f for f in (_finding(c) for c in checks) if f is not None],
        result=R.ProbeResult(
            verdict=status.value,
            reason=reason,
            images=tuple(_image(r) for r in results),
            comparisons=tuple(_comparison(c) for c in comparisons),
            checks=tuple(
                R.GateCheckResult(c.rule, c.status.value, c.subject, c.message) for c in checks
            ),
            trials=tuple(_trial(t) for t in trials),
        ),
        rules=rules_by_id(RULES),
        tables=_tables(results, checks, comparisons),
        charts=_charts(results, trials),
        outputs=_outputs(status, reason, candidate, comparisons),
        failed=status is GateStatus.FAIL,
        headline=headline,
        subject=candidate.image,
    )


def _finding(check: GateCheck) -> Finding | None:
    severity = _SEVERITY.get(check.status)
    if severity is None:
        return None
    return Finding(rule=check.rule, severity=severity, message=f"{check.subject}: {check.message}")


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1000:.1f}"


def _step_row(role: str, step: StepMetrics) -> tuple[str, ...]:
    p99 = step.latency.get("p99")
    p99_text = _ms(p99.value if p99 else None)
    if p99 is not None:
        p99_text += f" ({_ms(p99.low)}..{_ms(p99.high)})"
    figures = [step.latency.get(name) for name in ("p50", "p90", "p999")]
    ttft = step.ttft.get("p99")
    return (
        step.name,
        role,
        str(step.count),
        f"{step.error_rate:.1%}",
        f"{step.throughput:.1f}",
        _ms(figures[0].value if figures[0] else None),
        _ms(figures[1].value if figures[1] else None),
        p99_text,
        _ms(figures[2].value if figures[2] else None),
        _ms(step.max_latency),
        _ms(step.mean_latency),
        _ms(ttft.value if ttft else None),
        _ms(step.itl_p50),
        "-" if step.goodput is None else f"{step.goodput:.1f}",
        f"{step.lag_p99 * 1000:.2f}",
    )


def _tables(
    results: Sequence[ImageFigures], checks: Sequence[GateCheck], comparisons: Sequence[Comparison]
) -> list[Table]:
    steps = [
        _step_row(result.role, step)
        for index in range(max(len(r.steps) for r in results))
        for result in results
        if index < len(result.steps)
        for step in (result.steps[index],)
    ]
    tables = [
        Table(
            title="Latency by load step (ms; p99 with its 95% interval; all trials pooled)",
            headers=(
                "step",
                "image",
                "requests",
                "errors",
                "ok/s",
                "p50",
                "p90",
                "p99",
                "p99.9",
                "max",
                "mean",
                "TTFT p99",
                "ITL p50",
                "goodput/s",
                "gen. lag p99",
            ),
            rows=tuple(steps),
        ),
        Table(
            title="Memory shortage and recovery",
            headers=("image", "trial", "behaviour", "detail", "recovered"),
            rows=tuple(
                (r.role, str(i + 1), o.behaviour, o.detail, "yes" if o.recovered else "no")
                for r in results
                for i, o in enumerate(r.overloads)
            ),
        ),
        Table(
            title="GPU",
            headers=("image", "peak memory", "peak in its processes"),
            rows=tuple(
                (
                    r.role,
                    "unknown"
                    if r.peak_memory_fraction is None
                    else f"{r.peak_memory_fraction:.1%}",
                    "unknown"
                    if r.peak_process_bytes is None
                    else f"{r.peak_process_bytes / 2**20:.0f} MiB",
                )
                for r in results
            ),
        ),
        _queue_table(results),
        _slowest_table(results),
    ]
    tables = [table for table in tables if table.rows]
    if comparisons:
        tables.append(
            Table(
                title="Candidate vs stable (ratio of paired trials, 95% interval)",
                headers=("step", "figure", "candidate ms", "stable ms", "ratio", "interval"),
                rows=tuple(
                    (
                        c.step,
                        c.figure,
                        _ms(c.candidate),
                        _ms(c.stable),
                        f"x{c.ratio.value:.2f}",
                        "unknown"
                        if c.ratio.low is None or c.ratio.high is None
                        else f"x{c.ratio.low:.2f}..x{c.ratio.high:.2f}",
                    )
                    for c in comparisons
                ),
            )
        )
    tables.append(
        Table(
            title="Checks",
            headers=("check", "subject", "status", "detail"),
            rows=tuple((c.rule, c.subject, c.status.value, c.message) for c in checks),
        )
    )
    return tables


def _queue_table(results: Sequence[ImageFigures]) -> Table:
    return Table(
        title="Cold start and queues (queues: their peak during the load steps)",
        headers=(
            "image",
            "cold start",
            "model load",
            "in flight",
            "waiting for a slot",
            "server queue",
        ),
        rows=tuple((r.role, *_queue_cells(r.queue)) for r in results if r.measured),
    )


def _queue_cells(queue: QueueAndStart) -> tuple[str, ...]:
    cold = queue.cold_start
    load = queue.model_load
    server = (
        f"unknown ({queue.server_unknown})"
        if queue.server_peak is None
        else f"{queue.server_peak:g} ({queue.server_metric})"
    )
    return (
        f"unknown ({queue.cold_start_failure or 'not measured'})"
        if cold is None
        else f"{cold:.2f} s",
        "not in its log" if load is None else f"{load:.2f} s",
        str(queue.peak_in_flight),
        str(queue.peak_waiting),
        server,
    )


def _slowest_table(results: Sequence[ImageFigures]) -> Table:
    return Table(
        title="Slowest requests of the load steps (start: seconds into the trial's load)",
        headers=("image", "trial", "step", "start (s)", "latency (ms)", "outcome"),
        rows=tuple(
            (
                r.role,
                str(slow.trial),
                slow.step,
                f"{slow.start:.3f}",
                _ms(slow.latency),
                _outcome(slow.status, slow.error),
            )
            for r in results
            for slow in r.queue.slowest
        ),
    )


def _outcome(status: int, error: str) -> str:
    if not error:
        return f"ok ({status})"
    return f"status {status}" if error == "status" else error


def _charts(results: Sequence[ImageFigures], trials: Sequence[Trial]) -> list[Chart]:
    charts = []
    measured = [r for r in results if r.steps]
    if measured:
        names = tuple(step.name for step in measured[0].steps)
        series = [
            Series(f"{r.role} {label}", tuple(_chart_ms(s, key) for s in r.steps))
            for label, key in (("p99", "p99"), ("p50", "p50"))
            for r in measured
        ]
        charts.append(
            Chart("Latency vs load", "arrival rate", names, "latency (ms)", tuple(series))
        )
    charts += _queue_charts(trials)
    memory = _memory_chart(trials)
    if memory is not None:
        charts.append(memory)
    return charts


def _queue_charts(trials: Sequence[Trial]) -> list[Chart]:
    """Queue depths and the slowest request over the load steps of each image's first trial,
    on one time axis: the second chart sits under the first."""
    firsts = [(t, phase) for t in trials if t.index == 0 and (phase := t.phase(LOAD)) is not None]
    if not firsts:
        return []
    span = max(len(phase.queue.in_flight) * phase.queue.width for _, phase in firsts)
    width = max(1, math.ceil(span / _CHART_POINTS))
    count = max(1, math.ceil(span / width))
    depths: list[Series] = []
    slowest: list[Series] = []
    for trial, phase in firsts:
        queue = phase.queue
        depths.append(_series(f"{trial.role} in flight", _at(queue, queue.in_flight), width, count))
        depths.append(
            _series(f"{trial.role} waiting for a slot", _at(queue, queue.waiting), width, count)
        )
        if trial.server is not None and trial.server.metric is not None:
            server = _server_points(trial.server, phase)
            depths.append(_series(f"{trial.role} {trial.server.metric}", server, width, count))
        latency = [(at, None if v is None else v * 1000) for at, v in _at(queue, queue.slowest)]
        slowest.append(_series(f"{trial.role} slowest request", latency, width, count))
    x_values = tuple(str(index * width) for index in range(count))
    return [
        Chart("Queue depth over time (load steps, first trial)", "seconds", x_values,
              "requests", tuple(depths)),
        Chart("Slowest request over time (load steps, first trial)", "seconds", x_values,
              "latency (ms)", tuple(slowest)),
    ]  # fmt: skip


def _at(queue: ClientQueue, values: Sequence[float | None]) -> list[tuple[float, float | None]]:
    return [(index * queue.width, value) for index, value in enumerate(values)]


def _server_points(server: ServerTrace, phase: Phase) -> list[tuple[float, float | None]]:
    """The server's readings during the load, in seconds from the load's start."""
    offset = server.origin - phase.result.origin
    return [
        (at + offset, value)
        for at, value in server.points
        if 0 <= at + offset < phase.result.duration
    ]


def _series(
    name: str,
    points: Iterable[tuple[float, float | None]],
    width: int,
    count: int,
    digits: int = 2,
) -> Series:
    """The largest value in each chart bucket of `width` seconds. A bucket without one (a
    shorter trial, a gap) holds the last: a chart line needs every x."""
    peaks: list[float | None] = [None] * count
    for at, value in points:
        slot = min(int(at / width), count - 1)
        held = peaks[slot]
        if value is not None:
            peaks[slot] = value if held is None else max(held, value)
    line, last = [], 0.0
    for peak in peaks:
        last = last if peak is None else peak
        line.append(round(last, digits))
    return Series(name, tuple(line))


def _chart_ms(step: StepMetrics, key: str) -> float:
    estimate = step.latency.get(key)
    return round(estimate.value * 1000, 2) if estimate else 0.0


def _memory_chart(trials: Sequence[Trial]) -> Chart | None:
    firsts = [t for t in trials if t.index == 0 and t.gpu]
    if not firsts:
        return None
    span = max(t.gpu[-1].at - t.gpu[0].at for t in firsts)
    width = max(1, math.ceil(span / _CHART_POINTS))
    buckets = int(span / width) + 1
    series = tuple(
        _series(
            f"{trial.role} GPU memory used",
            [(s.at - trial.gpu[0].at, s.used_bytes / 2**20) for s in trial.gpu],
            width,
            buckets,
            digits=0,
        )
        for trial in firsts
    )
    x_values = tuple(str(index * width) for index in range(buckets))
    return Chart("GPU memory over time (first trial)", "seconds", x_values, "MiB", series)


def _outputs(
    status: GateStatus, reason: str, candidate: ImageFigures, comparisons: Sequence[Comparison]
) -> dict[str, str]:
    last = candidate.steps[-1] if candidate.steps else None
    p99 = last.latency.get("p99") if last else None
    ttft = last.ttft.get("p99") if last else None
    worst = max((c.ratio.value for c in comparisons), default=None)
    overloads = sorted({o.behaviour for o in candidate.overloads})
    queue = candidate.queue
    slowest_ok = max((s.max_latency for s in candidate.steps if s.max_latency), default=None)
    measured = candidate.measured
    return {
        "verdict": status.value,
        "reason": reason,
        "p99-ms": "" if p99 is None else f"{p99.value * 1000:.1f}",
        "ttft-p99-ms": "" if ttft is None else f"{ttft.value * 1000:.1f}",
        "peak-gpu-memory": ""
        if candidate.peak_memory_fraction is None
        else f"{candidate.peak_memory_fraction:.3f}",
        "overload": ",".join(overloads),
        "worst-ratio": "" if worst is None else f"{worst:.3f}",
        "max-latency-ms": "" if slowest_ok is None else f"{slowest_ok * 1000:.1f}",
        "cold-start-s": "" if queue.cold_start is None else f"{queue.cold_start:.2f}",
        "model-load-s": "" if queue.model_load is None else f"{queue.model_load:.2f}",
        "in-flight-peak": str(queue.peak_in_flight) if measured else "",
        "waiting-peak": str(queue.peak_waiting) if measured else "",
        "server-queue-peak": "" if queue.server_peak is None else f"{queue.server_peak:g}",
    }


def _image(result: ImageFigures) -> R.ProbedImage:
    return R.ProbedImage(
        role=result.role,
        image=result.image,
        start_failures=result.start_failures,
        steps=tuple(_step(step) for step in result.steps),
        overloads=tuple(
            R.OverloadResult(
                behaviour=o.behaviour,
                detail=o.detail,
                oom_lines=o.oom_lines,
                recovered=o.recovered,
                shortage=_step(o.shortage),
                recovery=None if o.recovery is None else _step(o.recovery),
            )
            for o in result.overloads
        ),
        peak_gpu_memory_fraction=result.peak_memory_fraction,
        peak_process_gpu_bytes=result.peak_process_bytes,
        gpu_error=result.gpu_error,
        log_tail=result.log_tail,
        queue=_queue(result.queue),
    )


def _queue(queue: QueueAndStart) -> R.QueueResult:
    return R.QueueResult(
        cold_start_s=_s_or_none(queue.cold_start),
        cold_start_failure=queue.cold_start_failure,
        model_load_s=_s_or_none(queue.model_load),
        peak_in_flight=queue.peak_in_flight,
        peak_waiting=queue.peak_waiting,
        server_queue_metric=queue.server_metric,
        server_queue_peak=queue.server_peak,
        server_queue_unknown=queue.server_unknown,
        slowest=tuple(
            R.SlowRequestResult(
                trial=slow.trial,
                step=slow.step,
                start_s=round(slow.start, 6),
                latency_ms=round(slow.latency * 1000, 3),
                status=slow.status,
                error=slow.error,
            )
            for slow in queue.slowest
        ),
    )


def _s_or_none(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _ms_or_none(value: float | None) -> float | None:
    return None if value is None else round(value * 1000, 3)


def _interval(estimate: Estimate, scale: float = 1.0) -> R.Interval:
    def fmt(x: float | None) -> float | None:
        return None if x is None else round(x * scale, 3)

    return R.Interval(round(estimate.value * scale, 3), fmt(estimate.low), fmt(estimate.high))


def _step(step: StepMetrics) -> R.StepResult:
    return R.StepResult(
        name=step.name,
        rate=step.rate,
        duration_s=step.duration,
        requests=step.count,
        ok=step.ok,
        rejected=step.rejected,
        errors=dict(step.error_kinds),
        throughput_rps=round(step.throughput, 3),
        latency_ms={k: _interval(e, 1000) for k, e in step.latency.items()},
        mean_latency_ms=_ms_or_none(step.mean_latency),
        max_latency_ms=_ms_or_none(step.max_latency),
        ttft_ms={k: _interval(e, 1000) for k, e in step.ttft.items()},
        itl_p50_ms=_ms_or_none(step.itl_p50),
        itl_p99_ms=_ms_or_none(step.itl_p99),
        tpot_p99_ms=_ms_or_none(step.tpot_p99),
        output_tokens_per_s=round(step.output_tokens_per_s, 3),
        goodput_rps=step.goodput,
        generator_lag_p99_ms=_ms_or_none(step.lag_p99),
        generator_lag_max_ms=_ms_or_none(step.lag_max),
        waited_for_concurrency_cap=step.capped,
    )


def _comparison(comparison: Comparison) -> R.ComparisonResult:
    return R.ComparisonResult(
        step=comparison.step,
        figure=comparison.figure,
        candidate_ms=round(comparison.candidate * 1000, 3),
        stable_ms=round(comparison.stable * 1000, 3),
        ratio=_interval(comparison.ratio),
    )


def _trial(trial: Trial) -> R.TrialResult:
    origin = trial.gpu[0].at if trial.gpu else 0.0
    first = trial.first_response
    return R.TrialResult(
        role=trial.role,
        image=trial.image,
        trial=trial.index + 1,
        startup_s=trial.startup_s,
        start_failure=trial.start_failure,
        phases=tuple(
            R.PhaseResult(
                name=phase.name,
                steps=tuple(R.PlannedStep(s.name, s.rate, s.duration) for s in phase.steps),
                monotonic_origin=phase.result.origin,
                running_after=phase.state_after.running,
                exit_code_after=phase.state_after.exit_code,
                fields=SAMPLE_FIELDS,
                requests=tuple(_sample_row(s) for s in phase.result.samples),
                queue=_client_queue(phase.queue),
            )
            for phase in trial.phases
        ),
        gpu=R.GpuTrace(origin, GPU_FIELDS, tuple(_gpu_row(s, origin) for s in trial.gpu)),
        cold_start_s=_s_or_none(first.seconds) if first else None,
        cold_start_failure=first.failure if first else None,
        model_load_s=_s_or_none(trial.model_load_s),
        server_queue=None if trial.server is None else _server_queue(trial.server),
    )


def _client_queue(queue: ClientQueue) -> R.ClientQueueTrace:
    rows = zip(queue.in_flight, queue.waiting, queue.slowest, strict=True)
    return R.ClientQueueTrace(
        bucket_s=queue.width,
        peak_in_flight=queue.peak_in_flight,
        peak_waiting=queue.peak_waiting,
        fields=QUEUE_FIELDS,
        points=tuple(
            (round(index * queue.width, 6), flying, waiting, _ms_or_none(slowest))
            for index, (flying, waiting, slowest) in enumerate(rows)
        ),
    )


def _server_queue(server: ServerTrace) -> R.ServerQueueTrace:
    return R.ServerQueueTrace(
        url=server.url,
        looked_for=server.names,
        metric=server.metric,
        type=server.kind,
        reads=server.scrapes,
        failed_reads=server.failures,
        first_failure=server.error,
        peaks={
            phase: R.PhasePeak(round(at, 3), value)
            for phase, (at, value) in server.peaks.items()
            if phase
        },
        monotonic_origin=server.origin,
        bucket_s=server.width,
        points=tuple((round(at, 6), value) for at, value in server.points),
    )


def _sample_row(sample: Sample) -> R.SampleRow:
    return (
        sample.step,
        _ms_or_none(sample.intended),
        _ms_or_none(sample.dispatched),
        _ms_or_none(sample.sent),
        _ms_or_none(sample.first_byte),
        _ms_or_none(sample.first_token),
        _ms_or_none(sample.done),
        sample.status,
        sample.error,
        sample.tokens,
        tuple(round(gap * 1000, 3) for gap in sample.itl),
        sample.queued,
    )


def _gpu_row(sample: GpuSample, origin: float) -> R.GpuRow:
    return (
        round((sample.at - origin) * 1000, 1),
        sample.gpu,
        sample.used_bytes,
        sample.total_bytes,
        sample.utilization,
        sample.power_mw,
        sample.event_reasons,
        sample.process_bytes,
    )
