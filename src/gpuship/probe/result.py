"""The probe stage's results (`gpuship probe`): a service probed under load, or a job run.

Figures are milliseconds unless the key says otherwise; an interval is a 95% confidence
interval (null bounds: too few samples). Raw samples are rows whose columns `fields` names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar, Literal


@dataclass(frozen=True)
class Interval:
    """An estimate and its 95% interval."""

    value: float
    low: float | None
    high: float | None


@dataclass(frozen=True)
class StepResult:
    """One load step (or an overload's shortage and recovery): what it measured."""

    name: str
    rate: float  # requests per second offered
    duration_s: float
    requests: int
    ok: int
    rejected: int
    errors: Mapping[str, int]  # error kind -> count
    throughput_rps: float
    latency_ms: Mapping[str, Interval]  # p50, p90, p99, p999
    mean_latency_ms: float | None
    max_latency_ms: float | None  # the slowest successful request
    ttft_ms: Mapping[str, Interval]
    itl_p50_ms: float | None
    itl_p99_ms: float | None
    tpot_p99_ms: float | None
    output_tokens_per_s: float
    goodput_rps: float | None
    generator_lag_p99_ms: float | None
    generator_lag_max_ms: float | None
    waited_for_concurrency_cap: int  # requests that waited for a slot


@dataclass(frozen=True)
class OverloadResult:
    """What the service did under a load past its capacity, and whether it recovered."""

    behaviour: str  # crashed | errors | shed | absorbed
    detail: str
    oom_lines: tuple[str, ...]
    recovered: bool
    shortage: StepResult
    recovery: StepResult | None


@dataclass(frozen=True)
class SlowRequestResult:
    """One of the slowest requests of the load steps, whatever its outcome."""

    trial: int
    step: str
    start_s: float  # its intended send, seconds from the start of its trial's load
    latency_ms: float
    status: int  # 0: no response
    error: str  # "" for a success, else its error kind


@dataclass(frozen=True)
class QueueResult:
    """Cold start, queues at their peak during the load steps, and the slowest requests.

    Cold start: from `docker start` to the first successful response to the first request
    (the longest over trials; null: unknown, `cold_start_failure` says why). The model-load
    time is what the server's log says (null: it says nothing the probe knows). Client side:
    requests holding a slot under probe.profile.concurrency, and waiting for one. Server side:
    the gauge `server_queue_metric` read from its Prometheus endpoint (summed over its
    series), or why it is unknown.
    """

    cold_start_s: float | None
    cold_start_failure: str | None
    model_load_s: float | None
    peak_in_flight: int
    peak_waiting: int
    server_queue_metric: str | None
    server_queue_peak: float | None
    server_queue_unknown: str | None
    slowest: tuple[SlowRequestResult, ...]


@dataclass(frozen=True)
class ProbedImage:
    """One image probed: the candidate, or the stable it is compared with."""

    role: str  # candidate | stable
    image: str
    start_failures: tuple[str, ...]
    steps: tuple[StepResult, ...]
    overloads: tuple[OverloadResult, ...]
    peak_gpu_memory_fraction: float | None
    peak_process_gpu_bytes: int | None
    gpu_error: str | None
    log_tail: tuple[str, ...]
    queue: QueueResult


@dataclass(frozen=True)
class ComparisonResult:
    """A figure of the candidate against stable's, at one step."""

    step: str
    figure: str
    candidate_ms: float
    stable_ms: float
    ratio: Interval


@dataclass(frozen=True)
class GateCheckResult:
    """One gate check."""

    PUBLISHED_NAME: ClassVar[str] = "CheckResult"

    rule: str
    status: str  # ok | note | warn | fail
    subject: str
    message: str


@dataclass(frozen=True)
class PlannedStep:
    """A load step as scheduled."""

    name: str
    rate: float
    duration_s: float


# One request, in the columns `fields` names: step, intended_ms, dispatched_ms, sent_ms,
# first_byte_ms, first_token_ms, done_ms, status, error, tokens, itl_ms, queued.
SampleRow = tuple[
    int,
    float | None,
    float | None,
    float | None,
    float | None,
    float | None,
    float | None,
    int,
    str,
    int,
    tuple[float, ...],
    bool,
]
# One GPU reading: t_ms, gpu, used_bytes, total_bytes, utilization, power_mw, event_reasons,
# process_bytes.
GpuRow = tuple[float, int, int, int, int | None, int | None, int | None, int | None]


# One bucket of a phase's client queue: t_s (its start), in_flight, waiting (the most in
# the bucket), slowest_ms (the slowest request sent in it; null: none was).
QueueRow = tuple[float, int, int, float | None]


@dataclass(frozen=True)
class ClientQueueTrace:
    """The client's queue over a phase, in at most limits.probe-series-max-points buckets."""

    bucket_s: float
    peak_in_flight: int
    peak_waiting: int
    fields: tuple[str, ...]
    points: tuple[QueueRow, ...]


@dataclass(frozen=True)
class PhaseResult:
    """One phase of a trial (steady load, overload...): its schedule and every request."""

    name: str
    steps: tuple[PlannedStep, ...]
    monotonic_origin: float
    running_after: bool
    exit_code_after: int | None
    fields: tuple[str, ...]
    requests: tuple[SampleRow, ...]
    queue: ClientQueueTrace


@dataclass(frozen=True)
class PhasePeak:
    """The largest reading of a phase, and when (seconds from the trace's origin)."""

    t_s: float
    value: float


@dataclass(frozen=True)
class ServerQueueTrace:
    """The server's queue read from its Prometheus endpoint over a trial (every phase).

    `metric` and `type` say what was read (null: none of `looked_for`, ever); `points` are
    (t_s, the largest reading in the bucket or null) in at most limits.probe-series-max-points
    buckets of `bucket_s` seconds from `monotonic_origin`.
    """

    url: str
    looked_for: tuple[str, ...]
    metric: str | None
    type: str | None
    reads: int
    failed_reads: int
    first_failure: str | None
    peaks: Mapping[str, PhasePeak]
    monotonic_origin: float
    bucket_s: float
    points: tuple[tuple[float, float | None], ...]


@dataclass(frozen=True)
class GpuTrace:
    """The GPU readings taken during a trial."""

    monotonic_origin: float
    fields: tuple[str, ...]
    samples: tuple[GpuRow, ...]


@dataclass(frozen=True)
class TrialResult:
    """One start of one image, with everything it measured."""

    role: str
    image: str
    trial: int
    startup_s: float | None
    start_failure: str | None
    phases: tuple[PhaseResult, ...]
    gpu: GpuTrace
    cold_start_s: float | None
    cold_start_failure: str | None
    model_load_s: float | None
    server_queue: ServerQueueTrace | None


@dataclass(frozen=True)
class ProbeResult:
    """A service probed: the verdict, every image's figures, the comparisons and raw samples."""

    verdict: str  # ok | warn | fail
    reason: str
    images: tuple[ProbedImage, ...]
    comparisons: tuple[ComparisonResult, ...]
    checks: tuple[GateCheckResult, ...]
    trials: tuple[TrialResult, ...]


@dataclass(frozen=True)
class JobResult:
    """`probe --job`: a job run to its end, its exit, memory and time per step."""

    mode: Literal["job"]
    verdict: str  # ok | fail
    reason: str
    exit_code: int | None
    seconds: float
    oom_lines: tuple[str, ...]
    peak_gpu_memory_fraction: float | None
    step_seconds: tuple[float, ...]
    gpu: tuple[tuple[float, int, int], ...]  # seconds since the first reading, gpu, used bytes
