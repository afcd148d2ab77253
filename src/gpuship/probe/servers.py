"""What the probe knows of inference servers: where each keeps its queue, how each logs the
time it took to load the model. Each entry names its source; a server not listed here is
read through probe.queue-metric and probe.target.model-load-log.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class QueueGauge:
    """A server's gauge of requests waiting to run, and where that is defined."""

    metric: str
    server: str
    source: str


# Every one is a Prometheus gauge; the probe sums its series (one per engine or per model).
QUEUE_GAUGES: tuple[QueueGauge, ...] = (
    QueueGauge(
        "vllm:num_requests_waiting",
        "vLLM",
        "vllm-project/vllm vllm/v1/metrics/loggers.py: prometheus_client.Gauge "
        '"Number of requests waiting to be processed.", labels model_name and engine; '
        "served at /metrics on the API server's port",
    ),
    QueueGauge(
        "tgi_queue_size",
        "TGI",
        "huggingface/text-generation-inference router/src/server.rs describe_gauge "
        '"Current queue size"; backends/v3/src/queue.rs sets it on every append; '
        "docs/source/reference/metrics.md (Gauge, Count); served at /metrics on the router's "
        "port, once the first request was queued",
    ),
    QueueGauge(
        "nv_inference_pending_request_count",
        "Triton",
        "triton-inference-server/core src/metrics.cc prometheus::BuildGauge "
        '"Instantaneous number of pending requests awaiting execution per-model." '
        "(labels model, version); server docs/user_guide/metrics.md; served on the metrics "
        "port (8002 by default), not the HTTP port: set probe.metrics-url",
    ),
)


@dataclass(frozen=True)
class LoadLog:
    """A log line giving the model-load time, in a group named s or ms."""

    pattern: re.Pattern[str]
    server: str
    source: str


MODEL_LOAD_LOGS: tuple[LoadLog, ...] = (
    LoadLog(
        re.compile(r"Model loading took [0-9.]+ GiB (?:memory )?and (?P<s>[0-9.]+) seconds"),
        "vLLM",
        'vllm/v1/worker/gpu_model_runner.py load_model: "Model loading took %s GiB memory '
        'and %.6f seconds" (before: "%.4f GiB and %.6f seconds"), once per worker',
    ),
    LoadLog(
        re.compile(r"Shard ready in (?P<s>[0-9.]+)s\b"),
        "TGI",
        'text-generation-inference launcher/src/main.rs: "Shard ready in {:?}" (a Rust '
        "Duration: 12.3s), once per shard",
    ),
    LoadLog(
        re.compile(r"Shard ready in (?P<ms>[0-9.]+)ms\b"),
        "TGI",
        "the same line for a shard ready in under a second",
    ),
)


def queue_metrics(chosen: str | None) -> tuple[str, ...]:
    """The gauges to look for, in order: the one probe.queue-metric names, or the known."""
    return (chosen,) if chosen else tuple(gauge.metric for gauge in QUEUE_GAUGES)


def model_load_seconds(log: str, pattern: str | None) -> float | None:
    """The model-load time the log gives: the largest over matching lines (every rank or
    shard loads its part; the model is loaded when the last is), None when no line says."""
    patterns: Sequence[re.Pattern[str]] = (
        [re.compile(pattern)] if pattern else [entry.pattern for entry in MODEL_LOAD_LOGS]
    )
    found = [
        seconds
        for line in log.split("\n")
        for regex in patterns
        if (match := regex.search(line)) and (seconds := group_seconds(match)) is not None
    ]
    return max(found) if found else None


def group_seconds(match: re.Match[str]) -> float | None:
    """Seconds from a match's group named ms or s; None when neither holds a number."""
    groups = match.groupdict()
    for name, scale in (("ms", 0.001), ("s", 1.0)):
        text = groups.get(name)
        if text is not None:
            try:
                value = float(text) * scale
            except ValueError:
                return None
            return value if math.isfinite(value) else None
    return None
