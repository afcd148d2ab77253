"""The gate: the candidate against its SLOs, its behaviour under shortage, and stable.

Each check is ok, fail, warn (uncertain or unknown) or note. A fail is certain: a figure past
its SLO, a crash, a regression whose whole 95 % interval lies past the threshold. A figure
the run cannot give (too few samples for a p99.9 bound, no GPU readings, a generator that
fell behind) is said to be unknown, never passed silently.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from gpuship.probe import rules
from gpuship.probe.analysis import ImageFigures
from gpuship.probe.config import CompareConfig, ProbeConfig, SloConfig
from gpuship.probe.metrics import StepMetrics
from gpuship.probe.stats import Estimate, paired_ratio


class GateStatus(str, enum.Enum):
    OK = "ok"
    NOTE = "note"
    WARN = "warn"
    FAIL = "fail"


@dataclass(frozen=True)
class GateCheck:
    """One judgement: the rule, its status, what it is about and why."""

    rule: str
    status: GateStatus
    subject: str
    message: str


@dataclass(frozen=True)
class Comparison:
    """Candidate/stable ratio of one figure at one step."""

    step: str
    figure: str
    candidate: float
    stable: float
    ratio: Estimate


def judge(
    candidate: ImageFigures, stable: ImageFigures | None, config: ProbeConfig
) -> tuple[list[GateCheck], list[Comparison]]:
    """Every check on the candidate, and the comparisons with stable."""
    checks = list(_start(candidate))
    if not candidate.measured:
        return checks, []
    behind = _behind_steps(candidate, config.max_lag_ms)
    checks += [
        GateCheck(rules.GENERATOR_BEHIND, GateStatus.WARN, f"step {name}", message)
        for name, message in behind.items()
    ]
    for step in candidate.steps:
        checks += _slo_checks(step, config.slo, step.name in behind)
    checks += _throughput(candidate.steps[-1], config.slo)
    checks += _gpu_memory(candidate, config.slo)
    checks += _server_queue(candidate, config)
    checks += _cold_start(candidate, config.slo)
    checks += _overload(candidate, config.slo)
    comparisons: list[Comparison] = []
    if stable is not None:
        more, comparisons = _compare(candidate, stable, config.compare, set(behind))
        checks += more
    return checks, comparisons


def verdict(checks: Sequence[GateCheck]) -> GateStatus:
    """fail if any check failed, else warn if any warned, else ok."""
    for status in (GateStatus.FAIL, GateStatus.WARN):
        if any(check.status is status for check in checks):
            return status
    return GateStatus.OK


def _start(result: ImageFigures) -> Iterator[GateCheck]:
    for failure in result.start_failures:
        yield GateCheck(rules.NOT_READY, GateStatus.FAIL, result.role, failure)


def _behind_steps(result: ImageFigures, max_lag_ms: float) -> dict[str, str]:
    behind: dict[str, str] = {}
    for trial in result.per_trial:
        for step in trial:
            if step.lag_p99 * 1000 > max_lag_ms and step.name not in behind:
                behind[step.name] = (
                    f"the load generator sent requests up to {step.lag_max * 1000:.1f} ms late "
                    f"(p99 {step.lag_p99 * 1000:.1f} ms > {max_lag_ms:g} ms): latency at this "
                    "step is partly the generator's and is not judged"
                )
    return behind


def _ms(value: float | None) -> str:
    return "?" if value is None else f"{value * 1000:.1f} ms"


def _interval(estimate: Estimate) -> str:
    return f"95% CI {_ms(estimate.low)}..{_ms(estimate.high)}"


def _slo_checks(step: StepMetrics, slo: SloConfig, behind: bool) -> Iterator[GateCheck]:
    subject = f"step {step.name}"
    if step.error_rate > slo.error_rate:
        kinds = ", ".join(f"{kind} x{n}" for kind, n in step.error_kinds)
        yield GateCheck(
            rules.ERROR_RATE,
            GateStatus.FAIL,
            subject,
            f"{step.error_rate:.1%} of {step.count} requests failed (SLO {slo.error_rate:.1%}): "
            f"{kinds}",
        )
    if behind:
        return
    limits = (
        (rules.LATENCY_SLO, "p99 latency", step.latency.get("p99"), slo.p99_ms),
        (rules.LATENCY_SLO, "p99.9 latency", step.latency.get("p999"), slo.p999_ms),
        (rules.TTFT_SLO, "p99 TTFT", step.ttft.get("p99"), slo.ttft_p99_ms),
    )
    for rule, label, estimate, limit in limits:
        if limit is None:
            continue
        yield _limit_check(rule, subject, label, estimate, limit)


def _limit_check(
    rule: str, subject: str, label: str, estimate: Estimate | None, limit_ms: float
) -> GateCheck:
    if estimate is None:
        return GateCheck(rule, GateStatus.WARN, subject, f"{label}: unknown, no successful request")
    value = estimate.value * 1000
    if value > limit_ms:
        return GateCheck(
            rule,
            GateStatus.FAIL,
            subject,
            f"{label} {value:.1f} ms > SLO {limit_ms:g} ms ({_interval(estimate)})",
        )
    if estimate.high is None:
        return GateCheck(
            rule,
            GateStatus.WARN,
            subject,
            f"{label} {value:.1f} ms is within the SLO but unknown at 95%: too few requests "
            "for an upper bound; lengthen the step",
        )
    return GateCheck(rule, GateStatus.OK, subject, f"{label} {value:.1f} ms <= {limit_ms:g} ms")


def _throughput(last: StepMetrics, slo: SloConfig) -> Iterator[GateCheck]:
    if slo.min_throughput_rps is None:
        return
    ok = last.throughput >= slo.min_throughput_rps
    yield GateCheck(
        rules.THROUGHPUT,
        GateStatus.OK if ok else GateStatus.FAIL,
        f"step {last.name}",
        f"{last.throughput:.1f} successful requests/s "
        f"({'>=' if ok else '<'} {slo.min_throughput_rps:g})",
    )


def _gpu_memory(result: ImageFigures, slo: SloConfig) -> Iterator[GateCheck]:
    if result.gpu_error:
        yield GateCheck(
            rules.GPU_UNKNOWN, GateStatus.WARN, "GPU", f"GPU readings unknown: {result.gpu_error}"
        )
    if slo.max_gpu_memory_fraction is None:
        return
    peak = result.peak_memory_fraction
    if peak is None:
        yield GateCheck(
            rules.GPU_MEMORY, GateStatus.WARN, "GPU", "peak GPU memory unknown (no readings)"
        )
        return
    ok = peak <= slo.max_gpu_memory_fraction
    yield GateCheck(
        rules.GPU_MEMORY,
        GateStatus.OK if ok else GateStatus.FAIL,
        "GPU",
        f"peak GPU memory {peak:.1%} of total ({'<=' if ok else '>'} "
        f"{slo.max_gpu_memory_fraction:.0%})",
    )


def _server_queue(result: ImageFigures, config: ProbeConfig) -> Iterator[GateCheck]:
    queue = result.queue
    limit = config.slo.server_queue_max
    asked = config.metrics_url is not None or config.queue_metric is not None
    if queue.server_unknown and asked:
        yield GateCheck(
            rules.SERVER_METRICS,
            GateStatus.WARN,
            "server queue",
            f"the server's queue is unknown: {queue.server_unknown}",
        )
    if limit is None:
        return
    if queue.server_peak is None:
        why = queue.server_unknown or "not read"
        message = f"server queue unknown ({why}); set probe.metrics-url or probe.queue-metric"
        yield GateCheck(rules.SERVER_QUEUE, GateStatus.WARN, "server queue", message)
        return
    ok = queue.server_peak <= limit
    yield GateCheck(
        rules.SERVER_QUEUE,
        GateStatus.OK if ok else GateStatus.FAIL,
        "server queue",
        f"{queue.server_metric} peaked at {queue.server_peak:g} during the load steps "
        f"({'<=' if ok else '>'} {limit:g})",
    )


def _cold_start(result: ImageFigures, slo: SloConfig) -> Iterator[GateCheck]:
    limit = slo.cold_start_max_s
    if limit is None:
        return
    seconds = result.queue.cold_start
    if seconds is None:
        why = result.queue.cold_start_failure or "not measured"
        yield GateCheck(
            rules.COLD_START, GateStatus.WARN, "cold start", f"cold start unknown: {why}"
        )
        return
    ok = seconds <= limit
    load = result.queue.model_load
    loaded = "" if load is None else f"; the model loaded in {load:.1f} s"
    yield GateCheck(
        rules.COLD_START,
        GateStatus.OK if ok else GateStatus.FAIL,
        "cold start",
        f"first successful response {seconds:.2f} s after docker start "
        f"({'<=' if ok else '>'} {limit:g} s){loaded}",
    )


def _overload(result: ImageFigures, slo: SloConfig) -> Iterator[GateCheck]:
    for index, event in enumerate(result.overloads):
        subject = f"shortage, trial {index + 1}"
        if event.behaviour == "crashed":
            yield GateCheck(
                rules.OOM_CRASH, GateStatus.FAIL, subject, f"the service crashed: {event.detail}"
            )
        elif event.behaviour == "errors":
            yield GateCheck(rules.OVERLOAD_ERRORS, GateStatus.WARN, subject, event.detail)
        else:
            yield GateCheck(
                rules.OVERLOAD_BEHAVIOUR,
                GateStatus.NOTE,
                subject,
                f"{event.behaviour}: {event.detail}",
            )
        if slo.must_recover and not event.recovered:
            detail = (
                f"{event.recovery.error_rate:.0%} of recovery requests failed"
                if event.recovery
                else "no recovery step ran"
            )
            yield GateCheck(
                rules.NOT_RECOVERED, GateStatus.FAIL, subject, f"did not recover: {detail}"
            )


def _compare(
    candidate: ImageFigures, stable: ImageFigures, config: CompareConfig, behind: set[str]
) -> tuple[list[GateCheck], list[Comparison]]:
    if not stable.measured:
        why = "; ".join(stable.start_failures) or "no trial ran"
        return [
            GateCheck(rules.NO_COMPARISON, GateStatus.WARN, "stable", f"not compared: {why}")
        ], []
    checks: list[GateCheck] = []
    comparisons: list[Comparison] = []
    trials = min(len(candidate.per_trial), len(stable.per_trial))
    for index, step in enumerate(candidate.steps):
        if step.name in behind:
            continue
        for figure in config.metrics:
            found = _comparison(candidate, stable, index, figure, trials)
            if found is None:
                continue
            comparisons.append(found)
            checks.append(_regression_check(found, config.max_regression, trials))
    return checks, comparisons


def _comparison(
    candidate: ImageFigures, stable: ImageFigures, index: int, figure: str, trials: int
) -> Comparison | None:
    ours = [t[index].figure(figure) for t in candidate.per_trial[:trials]]
    theirs = [t[index].figure(figure) for t in stable.per_trial[:trials]]
    if any(v is None for v in ours + theirs):
        return None
    ours_f = [v for v in ours if v is not None]
    theirs_f = [v for v in theirs if v is not None]
    ratio = paired_ratio(ours_f, theirs_f)
    if ratio is None:
        return None
    if trials == 1:
        ratio = _single_run_ratio(candidate.steps[index], stable.steps[index], figure, ratio)
    pooled_c = candidate.steps[index].figure(figure) or 0.0
    pooled_s = stable.steps[index].figure(figure) or 0.0
    return Comparison(candidate.steps[index].name, figure, pooled_c, pooled_s, ratio)


def _single_run_ratio(
    ours: StepMetrics, theirs: StepMetrics, figure: str, ratio: Estimate
) -> Estimate:
    """One trial each: bound the ratio by the two percentiles' own intervals (sampling noise
    only; run-to-run noise needs trials)."""
    name = figure.removeprefix("ttft-")
    table_c = ours.ttft if figure.startswith("ttft-") else ours.latency
    table_s = theirs.ttft if figure.startswith("ttft-") else theirs.latency
    c, s = table_c.get(name), table_s.get(name)
    if c is None or s is None:
        return ratio
    low = c.low / s.high if c.low is not None and s.high else None
    high = c.high / s.low if c.high is not None and s.low else None
    return Estimate(ratio.value, low, high)


def _regression_check(found: Comparison, threshold: float, trials: int) -> GateCheck:
    subject = f"step {found.step} {found.figure}"
    ratio = found.ratio
    limit = 1 + threshold
    noise = (
        f"95% CI x{ratio.low:.2f}..x{ratio.high:.2f} over {trials} paired trials"
        if ratio.low is not None and ratio.high is not None
        else f"interval unknown with {trials} trial(s)"
    )
    said = (
        f"candidate {_ms(found.candidate)} vs stable {_ms(found.stable)}: "
        f"x{ratio.value:.2f} ({noise})"
    )
    if ratio.low is not None and ratio.low > limit:
        return GateCheck(rules.REGRESSION, GateStatus.FAIL, subject, f"{said} > x{limit:.2f}")
    if ratio.value > limit:
        return GateCheck(
            rules.REGRESSION_UNCERTAIN,
            GateStatus.WARN,
            subject,
            f"{said}: worse than x{limit:.2f} is not certain at 95%",
        )
    return GateCheck(rules.REGRESSION, GateStatus.OK, subject, said)
