"""The `probe:` section of gpuship.yaml: how the candidate is started, loaded and judged."""

from __future__ import annotations

import re
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator, model_validator

from gpuship.config.section import Section

# Every number of the probe is finite and bounded, far above any real run, so the schedule and
# the statistics stay finite arithmetic (`rate: .inf` once spun forever, `1e308` overflowed).
DAY_S = 86_400
MAX_RATE = 100_000
MAX_CONCURRENCY = 100_000
# (pydantic accepts infinity and NaN in a float unless told not to.)
Seconds = Annotated[float, Field(gt=0, le=DAY_S, allow_inf_nan=False)]
Pause = Annotated[float, Field(ge=0, le=DAY_S, allow_inf_nan=False)]
Rate = Annotated[float, Field(gt=0, le=MAX_RATE, allow_inf_nan=False)]
Concurrency = Annotated[int, Field(ge=1, le=MAX_CONCURRENCY)]
Millis = Annotated[float, Field(gt=0, le=DAY_S * 1000, allow_inf_nan=False)]
HttpStatus = Annotated[int, Field(ge=100, le=599)]

RequestKind = Literal["http", "completions", "chat"]
CompareFigure = Literal["p50", "p90", "p99", "p999", "ttft-p99", "mean"]
DEFAULT_COMPARED: tuple[CompareFigure, ...] = ("p99", "ttft-p99")


class TargetConfig(Section):
    """How the image is started and when it is ready."""

    port: int = Field(default=8000, ge=1, le=65535, description="Port the server listens on.")
    network: Literal["bridge", "host"] = Field(
        default="bridge",
        description="bridge: publish the port on 127.0.0.1 (a free host port); host: the "
        "container shares the runner's network and the server must listen on `port`.",
    )
    gpus: Literal["all", "none"] | list[str] = Field(
        default="all",
        description="GPUs requested like `docker run --gpus` (all, none, or indexes/UUIDs).",
    )
    health_path: str | None = Field(
        default="/health",
        description="Ready when GET of this path answers 2xx; null to rely on ready-log.",
    )
    ready_log: str | None = Field(
        default=None, description="Regex: ready when a log line matches (instead of health)."
    )
    startup_timeout_s: Seconds = Field(
        default=600, description="Give up when the server is not ready by then."
    )
    env: dict[str, str] = Field(default_factory=dict, description="Container environment.")
    command: list[str] | None = Field(default=None, description="Override the image's CMD.")
    volumes: list[str] = Field(
        default_factory=list, description="Bind mounts, HOST:CONTAINER[:ro] (model caches)."
    )
    shm_size: str | None = Field(default=None, description="Size of /dev/shm, e.g. 8g.")
    memory_limit: str | None = Field(
        default=None, description="Host memory limit of the container, e.g. 32g."
    )
    model_load_log: str | None = Field(
        default=None,
        description="Regex over log lines giving the model-load time in a group named s or ms "
        "(the largest over the lines: one per rank or shard). Unset: vLLM's and TGI's own "
        "lines.",
    )

    @field_validator("model_load_log")
    @classmethod
    def _load_pattern(cls, value: str | None) -> str | None:
        if value is not None:
            groups = _regex(value).groupindex
            if "s" not in groups and "ms" not in groups:
                raise ValueError("needs a group named s or ms: (?P<s>[0-9.]+)")
        return value

    @field_validator("health_path")
    @classmethod
    def _absolute(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith("/"):
            raise ValueError("must start with '/'")
        return value

    @model_validator(mode="after")
    def _readiness(self) -> TargetConfig:
        if self.health_path is None and self.ready_log is None:
            raise ValueError("give health-path or ready-log: the probe must know when to start")
        return self


class RequestConfig(Section):
    """What each request is. `requests-file` is JSON Lines: one request per line."""

    kind: RequestKind = Field(
        default="http",
        description="http: plain requests; completions/chat: OpenAI-compatible streaming "
        "(/v1/completions, /v1/chat/completions) with TTFT and inter-token latency.",
    )
    method: str = Field(default="GET", description="http: method when a line gives none.")
    path: str | None = Field(
        default=None,
        description="Request path (default / for http, /v1/completions or /v1/chat/completions).",
    )
    requests_file: str | None = Field(
        default=None,
        description="JSON Lines. http: {method, path, body, headers}; completions/chat: the "
        "request body ({prompt|messages, max_tokens, ...}), sent with stream: true.",
    )
    model: str = Field(default="model", description="completions/chat: the `model` field.")
    max_tokens: int = Field(
        default=64, ge=1, le=1_000_000, description="completions/chat default max_tokens."
    )
    expected_status: list[HttpStatus] = Field(
        default_factory=lambda: [200], description="Statuses that count as success."
    )
    timeout_s: Seconds = Field(default=60, description="Per-request timeout.")


class StepConfig(Section):
    """One step of the ramp: an arrival rate held for a duration."""

    rate: Rate = Field(description="Arrivals per second.")
    duration_s: Seconds = Field(description="How long the step lasts.")


class ProfileConfig(Section):
    """The load: arrival process, concurrency cap and ramp."""

    arrival: Literal["poisson", "constant"] = Field(
        default="poisson", description="Gaps between arrivals: exponential or fixed."
    )
    seed: int = Field(
        default=1,
        ge=-(2**63),
        lt=2**63,
        description="Seed of the Poisson arrivals (same load each run).",
    )
    concurrency: Concurrency = Field(
        default=256, description="Most requests in flight; more wait (and that counts)."
    )
    warmup_s: Pause = Field(
        default=2, description="Load at the first step's rate before measuring."
    )
    steps: list[StepConfig] = Field(
        default_factory=lambda: [
            StepConfig(rate=5, duration_s=20),
            StepConfig(rate=10, duration_s=20),
            StepConfig(rate=20, duration_s=20),
        ],
        min_length=1,
        description="Ramp steps, in order.",
    )


class ShortageConfig(Section):
    """The memory-shortage step: push past capacity, then check recovery."""

    enabled: bool = Field(default=True, description="Run the shortage and recovery steps.")
    rate: Rate = Field(default=50, description="Arrivals per second past capacity.")
    duration_s: Seconds = Field(default=20)
    concurrency: Concurrency = Field(default=1024, description="Cap during the shortage.")
    requests_file: str | None = Field(
        default=None, description="Other requests for the shortage (e.g. longer prompts)."
    )
    cooldown_s: Pause = Field(default=5, description="Pause after the shortage, before recovery.")
    recovery_rate: Rate = Field(default=2, description="Arrivals per second in recovery.")
    recovery_duration_s: Seconds = Field(default=10)


class SloConfig(Section):
    """Service level objectives the candidate must meet (omit one to skip it)."""

    p99_ms: Millis | None = Field(default=None, description="p99 latency, each step.")
    p999_ms: Millis | None = Field(default=None, description="p99.9 latency, each step.")
    ttft_p99_ms: Millis | None = Field(default=None, description="p99 time to first token.")
    error_rate: float = Field(
        default=0.01,
        ge=0,
        le=1,
        allow_inf_nan=False,
        description="Most failed requests, a fraction, each step.",
    )
    min_throughput_rps: float | None = Field(
        default=None,
        gt=0,
        le=MAX_RATE,
        allow_inf_nan=False,
        description="Fewest successful requests/s at the last step.",
    )
    max_gpu_memory_fraction: float | None = Field(
        default=None,
        gt=0,
        le=1,
        allow_inf_nan=False,
        description="Most GPU memory used, a fraction of the total.",
    )
    must_recover: bool = Field(
        default=True, description="After the shortage the service answers again."
    )
    goodput_ttft_ms: Millis | None = Field(
        default=None, description="Goodput counts requests with TTFT under this."
    )
    goodput_tpot_ms: Millis | None = Field(
        default=None, description="Goodput counts requests with time per token under this."
    )
    goodput_latency_ms: Millis | None = Field(
        default=None, description="Goodput counts requests with latency under this."
    )
    server_queue_max: float | None = Field(
        default=None,
        ge=0,
        le=10_000_000,
        allow_inf_nan=False,
        description="Most requests waiting in the server's own queue (its Prometheus gauge), "
        "at any time of the load steps.",
    )
    cold_start_max_s: float | None = Field(
        default=None,
        gt=0,
        le=86_400,
        allow_inf_nan=False,
        description="Longest cold start: from `docker start` to the first successful response.",
    )


class CompareConfig(Section):
    """The comparison with the image the floating tag points at."""

    stable_tag: str | None = Field(
        default="stable",
        description="Tag of the image to compare with, in the candidate's repository; null: "
        "no comparison.",
    )
    trials: int = Field(
        default=3, ge=1, le=20, description="Runs of each image, alternated, for the noise."
    )
    max_regression: float = Field(
        default=0.10,
        ge=0,
        le=100,
        allow_inf_nan=False,
        description="Fail when the candidate is worse by more than this (a fraction).",
    )
    metrics: list[CompareFigure] = Field(
        default_factory=lambda: list(DEFAULT_COMPARED),
        description="What is compared, at every step.",
    )


class JobConfig(Section):
    """Job mode: run the image's command to the end and watch it."""

    timeout_s: Seconds = Field(default=600, description="Stop the job after this long.")
    step_pattern: str | None = Field(
        default=None,
        description="Regex over log lines marking a step; a group named ms or s gives its "
        "time, else the time between matching lines is used.",
    )


class ProbeConfig(Section):
    """Load and memory probe of a candidate image (`gpuship probe`)."""

    target: TargetConfig = Field(default_factory=TargetConfig)
    request: RequestConfig = Field(default_factory=RequestConfig)
    profile: ProfileConfig = Field(default_factory=ProfileConfig)
    shortage: ShortageConfig = Field(default_factory=ShortageConfig)
    slo: SloConfig = Field(default_factory=SloConfig)
    compare: CompareConfig = Field(default_factory=CompareConfig)
    job: JobConfig = Field(default_factory=JobConfig)
    sample_interval_ms: float = Field(
        default=100,
        ge=10,
        le=1000,
        allow_inf_nan=False,
        description="NVML sampling period (100 ms = 10 Hz).",
    )
    max_lag_ms: float = Field(
        default=5,
        gt=0,
        le=60_000,
        allow_inf_nan=False,
        description="The generator is behind its schedule when its p99 dispatch lag at a step "
        "exceeds this; that step's latencies are then not the server's.",
    )
    metrics_url: str | None = Field(
        default=None,
        description="The server's Prometheus endpoint: a path on the server's own address "
        "(/metrics) or http://HOST:PORT/PATH. Unset: /metrics on the server's address, used "
        "when it holds a known queue gauge (vLLM, TGI).",
    )
    queue_metric: str | None = Field(
        default=None,
        description="Name of the gauge holding the server's queue. Unset: the first of "
        "vllm:num_requests_waiting, tgi_queue_size, nv_inference_pending_request_count the "
        "endpoint exposes.",
    )
    metrics_interval_ms: float = Field(
        default=500,
        ge=50,
        le=60_000,
        allow_inf_nan=False,
        description="How often the server's endpoint is read.",
    )
    slowest_requests: int = Field(
        default=10, ge=1, le=1000, description="The slowest requests listed in the report."
    )

    @field_validator("metrics_url")
    @classmethod
    def _metrics_url(cls, value: str | None) -> str | None:
        if value is None or value.startswith("/"):
            return value
        try:
            parts = urlsplit(value)
            port = parts.port
        except ValueError as error:
            raise ValueError(f"not a URL: {error}") from None
        if parts.scheme != "http" or not parts.hostname or port == 0:
            raise ValueError("give a path (/metrics) or http://HOST:PORT/PATH")
        if parts.username is not None or parts.password is not None:
            raise ValueError("must not hold credentials")
        return value

    @field_validator("queue_metric")
    @classmethod
    def _metric_name(cls, value: str | None) -> str | None:
        # The metric name grammar of the Prometheus data model.
        if value is not None and not re.fullmatch(r"[a-zA-Z_:][a-zA-Z0-9_:]*", value):
            raise ValueError("not a Prometheus metric name ([a-zA-Z_:][a-zA-Z0-9_:]*)")
        return value

    def planned_arrivals(self) -> float:
        """Requests one trial schedules (warm-up, ramp, shortage, recovery): the schedule is
        built before the run, so its size is known, and bounded (limits.probe-max-arrivals)."""
        profile, shortage = self.profile, self.shortage
        total = profile.steps[0].rate * profile.warmup_s
        total += sum(step.rate * step.duration_s for step in profile.steps)
        if shortage.enabled:
            total += shortage.rate * shortage.duration_s
            total += shortage.recovery_rate * shortage.recovery_duration_s
        return total


def _regex(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as error:
        raise ValueError(f"not a regular expression: {error}") from None
