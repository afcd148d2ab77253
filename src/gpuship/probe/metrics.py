"""From samples to the figures a step is judged on.

Definitions follow vLLM's serving benchmark (`vllm/benchmarks/serve.py`, `calculate_metrics`)
and NVIDIA genai-perf (docs.nvidia.com/nim/benchmarking/llm/latest/metrics.html), except that
every latency here starts at the request's *intended* send time (open loop, no coordinated
omission), where both of those start when the request was actually sent:

- latency (E2EL): intended send -> last byte; percentiles and max over successful requests;
- TTFT: intended send -> first chunk with text (empty first chunks are not tokens);
- ITL: gaps between consecutive text chunks (vLLM's `itl`), pooled over requests;
- TPOT: (latency - TTFT) / (output tokens - 1) per request (genai-perf calls this ITL);
- request throughput: successful requests / step duration; output tokens/s likewise;
- goodput: successful requests meeting every per-request goodput SLO / step duration.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from gpuship.http.load import Sample
from gpuship.probe.config import SloConfig
from gpuship.probe.schedule import Step
from gpuship.probe.stats import Estimate, percentile, percentile_estimate

PERCENTILES = {"p50": 0.50, "p90": 0.90, "p99": 0.99, "p999": 0.999}
# Statuses that mean "not now": a clean rejection, not a failure of the service.
REJECTION_STATUSES = frozenset({429, 503})


@dataclass(frozen=True)
class StepMetrics:
    """Figures of one step (seconds; rates per second)."""

    name: str
    rate: float
    duration: float
    count: int
    ok: int
    rejected: int
    error_kinds: tuple[tuple[str, int], ...]
    latency: dict[str, Estimate]
    mean_latency: float | None
    max_latency: float | None
    ttft: dict[str, Estimate]
    itl_p50: float | None
    itl_p99: float | None
    tpot_p99: float | None
    output_tokens_per_s: float
    goodput: float | None
    lag_p99: float
    lag_max: float
    capped: int

    @property
    def errors(self) -> int:
        """Requests that did not succeed (rejections included)."""
        return self.count - self.ok

    @property
    def error_rate(self) -> float:
        return self.errors / self.count if self.count else 0.0

    @property
    def throughput(self) -> float:
        return self.ok / self.duration

    def figure(self, name: str) -> float | None:
        """A comparable figure by name: p50/p90/p99/p999, ttft-p99, mean (seconds)."""
        if name == "mean":
            return self.mean_latency
        if name.startswith("ttft-"):
            estimate = self.ttft.get(name.removeprefix("ttft-"))
        else:
            estimate = self.latency.get(name)
        return None if estimate is None else estimate.value


def step_metrics(step: Step, samples: Sequence[Sample], slo: SloConfig) -> StepMetrics:
    """Everything the gate and the report need about one step."""
    good = [s for s in samples if not s.error]
    latencies = sorted(s.latency for s in good)
    ttfts = sorted(t for s in good if (t := s.ttft) is not None)
    itls = sorted(gap for s in good for gap in s.itl)
    tpots = sorted(_tpot(s) for s in good if s.tokens > 1 and s.ttft is not None)
    lags = sorted(s.dispatched - s.intended for s in samples) or [0.0]
    kinds = Counter(error_kind(s) for s in samples if s.error)
    return StepMetrics(
        name=step.name,
        rate=step.rate,
        duration=step.duration,
        count=len(samples),
        ok=len(good),
        rejected=sum(1 for s in samples if s.error == "status" and s.status in REJECTION_STATUSES),
        error_kinds=tuple(sorted(kinds.items())),
        latency=_estimates(latencies),
        mean_latency=sum(latencies) / len(latencies) if latencies else None,
        max_latency=latencies[-1] if latencies else None,
        ttft=_estimates(ttfts),
        itl_p50=percentile(itls, 0.5) if itls else None,
        itl_p99=percentile(itls, 0.99) if itls else None,
        tpot_p99=percentile(tpots, 0.99) if tpots else None,
        output_tokens_per_s=sum(s.tokens for s in good) / step.duration,
        goodput=_goodput(good, slo, step.duration),
        lag_p99=percentile(lags, 0.99),
        lag_max=lags[-1],
        capped=sum(1 for s in samples if s.queued),
    )


def _estimates(ordered: list[float]) -> dict[str, Estimate]:
    if not ordered:
        return {}
    return {name: percentile_estimate(ordered, p) for name, p in PERCENTILES.items()}


def _tpot(sample: Sample) -> float:
    return (sample.latency - (sample.ttft or 0.0)) / (sample.tokens - 1)


def error_kind(sample: Sample) -> str:
    return f"status {sample.status}" if sample.error == "status" else sample.error


def _goodput(good: Sequence[Sample], slo: SloConfig, duration: float) -> float | None:
    limits = (slo.goodput_ttft_ms, slo.goodput_tpot_ms, slo.goodput_latency_ms)
    if all(limit is None for limit in limits):
        return None
    count = 0
    for sample in good:
        ttft = sample.ttft if sample.ttft is not None else sample.latency
        tpot = _tpot(sample) if sample.tokens > 1 else 0.0
        figures = (ttft, tpot, sample.latency)
        if all(
            limit is None or figure * 1000 <= limit
            for limit, figure in zip(limits, figures, strict=True)
        ):
            count += 1
    return count / duration
