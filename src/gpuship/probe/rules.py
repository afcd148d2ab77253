"""Catalog of the probe's findings (`gpuship probe`), as shared `Rule`s."""

from __future__ import annotations

from gpuship.report import Rule, Severity

NOT_READY = "GSP101"
LATENCY_SLO = "GSP102"
TTFT_SLO = "GSP103"
ERROR_RATE = "GSP104"
THROUGHPUT = "GSP105"
GPU_MEMORY = "GSP106"
SERVER_QUEUE = "GSP107"
COLD_START = "GSP108"
OOM_CRASH = "GSP201"
OVERLOAD_ERRORS = "GSP202"
NOT_RECOVERED = "GSP203"
OVERLOAD_BEHAVIOUR = "GSP204"
REGRESSION = "GSP301"
REGRESSION_UNCERTAIN = "GSP302"
NO_COMPARISON = "GSP303"
GENERATOR_BEHIND = "GSP401"
GPU_UNKNOWN = "GSP402"
SERVER_METRICS = "GSP403"
JOB_OOM = "GSP501"
JOB_TIMEOUT = "GSP502"
JOB_FAILED = "GSP503"

_CATEGORY = "performance"

RULES: tuple[Rule, ...] = (
    Rule(
        id=NOT_READY,
        name="probe-not-ready",
        category=_CATEGORY,
        severity=Severity.ERROR,
        summary="The image starts and becomes ready within probe.target.startup-timeout-s",
        rationale="An image that never answers its health check would never take traffic.",
        fix="Read the log lines in the finding; check probe.target.port and health-path.",
    ),
    Rule(
        id=LATENCY_SLO,
        name="probe-latency-slo",
        category=_CATEGORY,
        severity=Severity.ERROR,
        summary="p99 and p99.9 latency at each load step are within probe.slo",
        rationale="Users wait for the slowest responses, not the average: a p99 over the "
        "SLO means one request in a hundred is too slow at that load.",
        fix="Find what the slow requests wait for (batching, queueing, a cold path), or "
        "raise the SLO if it was wrong.",
    ),
    Rule(
        id=TTFT_SLO,
        name="probe-ttft-slo",
        category=_CATEGORY,
        severity=Severity.ERROR,
        summary="p99 time to first token at each load step is within probe.slo.ttft-p99-ms",
        fix="Check prefill batching and the scheduler's queue; shorter prompts or a lower "
        "max batch size trade throughput for TTFT.",
    ),
    Rule(
        id=ERROR_RATE,
        name="probe-error-rate",
        category=_CATEGORY,
        severity=Severity.ERROR,
        summary="Failed requests at each load step stay under probe.slo.error-rate",
        fix="See the error kinds in the finding (status codes, resets, timeouts).",
    ),
    Rule(
        id=THROUGHPUT,
        name="probe-throughput",
        category=_CATEGORY,
        severity=Severity.ERROR,
        summary="Successful requests/s at the last step reach probe.slo.min-throughput-rps",
    ),
    Rule(
        id=GPU_MEMORY,
        name="probe-gpu-memory",
        category=_CATEGORY,
        severity=Severity.ERROR,
        summary="Peak GPU memory stays under probe.slo.max-gpu-memory-fraction",
        rationale="Without headroom, a longer prompt or a second model on the GPU runs it "
        "out of memory in production.",
        fix="Lower the server's memory fraction (e.g. vLLM --gpu-memory-utilization) or its "
        "batch size.",
    ),
    Rule(
        id=SERVER_QUEUE,
        name="probe-server-queue",
        category=_CATEGORY,
        severity=Severity.ERROR,
        summary="The server's own queue stays under probe.slo.server-queue-max during the "
        "load steps",
        rationale="Requests the server accepted but has not started wait in its queue; a "
        "queue that grows at a load the service must carry means that load is past its "
        "capacity, and latency grows with the queue.",
        fix="Raise the server's batch size or concurrency (vLLM --max-num-seqs, TGI "
        "--max-batch-total-tokens, Triton instance count), or give it more GPUs.",
    ),
    Rule(
        id=COLD_START,
        name="probe-cold-start",
        category=_CATEGORY,
        severity=Severity.ERROR,
        summary="From `docker start` to the first successful response takes at most "
        "probe.slo.cold-start-max-s",
        rationale="A new node or a restarted service is unavailable for its whole cold "
        "start: it bounds how fast the fleet scales out and recovers.",
        fix="See the model-load time beside it: a slow load wants weights on a local "
        "volume or a faster format (safetensors); the rest is the server's own start.",
    ),
    Rule(
        id=OOM_CRASH,
        name="probe-oom-crash",
        category=_CATEGORY,
        severity=Severity.ERROR,
        summary="The service does not crash when GPU memory runs short",
        rationale="A server that dies on a burst takes every request in flight with it and "
        "stays down until restarted; shedding (429/503) keeps it serving.",
        fix="Bound admitted work by memory (max concurrent sequences, KV-cache budget) and "
        "answer 429/503 past it.",
    ),
    Rule(
        id=OVERLOAD_ERRORS,
        name="probe-overload-errors",
        category=_CATEGORY,
        severity=Severity.WARNING,
        summary="Under memory shortage the service rejects cleanly (429/503), not with errors",
        fix="Return 429 or 503 with Retry-After instead of 500s, resets or timeouts.",
    ),
    Rule(
        id=NOT_RECOVERED,
        name="probe-not-recovered",
        category=_CATEGORY,
        severity=Severity.ERROR,
        summary="After the shortage, the service answers again at low load",
        fix="Free memory of failed requests; restart policies hide a crash, not fix it.",
    ),
    Rule(
        id=OVERLOAD_BEHAVIOUR,
        name="probe-overload-behaviour",
        category=_CATEGORY,
        severity=Severity.NOTE,
        summary="What the service did under memory shortage (shed load, absorbed it)",
    ),
    Rule(
        id=REGRESSION,
        name="probe-regression",
        category=_CATEGORY,
        severity=Severity.ERROR,
        summary="The candidate is not worse than stable beyond probe.compare.max-regression",
        rationale="Judged on tail percentiles over repeated, alternated trials: the whole "
        "95 % interval of the candidate/stable ratio lies above the threshold.",
        fix="Compare the percentile tables; a tail regression often comes from a changed "
        "batching or memory setting.",
    ),
    Rule(
        id=REGRESSION_UNCERTAIN,
        name="probe-regression-uncertain",
        category=_CATEGORY,
        severity=Severity.WARNING,
        summary="The candidate looks worse than stable, but within the run's noise",
        fix="Run more trials (probe.compare.trials) or longer steps.",
    ),
    Rule(
        id=NO_COMPARISON,
        name="probe-no-comparison",
        category=_CATEGORY,
        severity=Severity.WARNING,
        summary="The stable image could not be measured, so nothing was compared",
    ),
    Rule(
        id=GENERATOR_BEHIND,
        name="probe-generator-behind",
        category=_CATEGORY,
        severity=Severity.WARNING,
        summary="The load generator kept to its schedule (within probe.max-lag-ms)",
        rationale="When the generator itself is late, measured latency is partly its own; "
        "that step's latency is not judged.",
        fix="Lower the step's rate, or run the probe on a runner with a free core.",
    ),
    Rule(
        id=GPU_UNKNOWN,
        name="probe-gpu-unknown",
        category=_CATEGORY,
        severity=Severity.WARNING,
        summary="GPU readings were taken through NVML during the run",
    ),
    Rule(
        id=SERVER_METRICS,
        name="probe-server-metrics",
        category=_CATEGORY,
        severity=Severity.WARNING,
        summary="The server's queue was read from the Prometheus endpoint probe.metrics-url "
        "or probe.queue-metric names",
        fix="Check the URL (a path on the server's port, or http://HOST:PORT/PATH) and that "
        "the metric is a gauge the endpoint exposes.",
    ),
    Rule(
        id=JOB_OOM,
        name="probe-job-oom",
        category=_CATEGORY,
        severity=Severity.ERROR,
        summary="The job did not run out of GPU or host memory",
        fix="Lower the batch size, enable activation checkpointing, or use a larger GPU.",
    ),
    Rule(
        id=JOB_TIMEOUT,
        name="probe-job-timeout",
        category=_CATEGORY,
        severity=Severity.ERROR,
        summary="The job finished within probe.job.timeout-s",
    ),
    Rule(
        id=JOB_FAILED,
        name="probe-job-failed",
        category=_CATEGORY,
        severity=Severity.ERROR,
        summary="The job exited 0",
    ),
)
