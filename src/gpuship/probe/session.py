"""Wire the adapters (Docker engine, NVML, load generator) to one probe, and judge it."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpuship.docker.engine import Engine, EngineRefused, ImageMissing
from gpuship.docker.service import ContainerState, ServiceSpec, running_service
from gpuship.errors import LimitExceeded
from gpuship.http.load import Arrival, LoadResult, RequestSpec, Target, run_load
from gpuship.http.metrics import scraping
from gpuship.limits import DEFAULT_LIMITS, Limits
from gpuship.nvml.sampler import sampling
from gpuship.probe import rules
from gpuship.probe.analysis import image_figures
from gpuship.probe.config import ProbeConfig, TargetConfig
from gpuship.probe.gate import GateCheck, GateStatus, judge
from gpuship.probe.report import probe_report
from gpuship.probe.requests import SHORTAGE_FIELD, load_requests
from gpuship.probe.run import Running, Workload, load_steps, run_trials
from gpuship.probe.servers import queue_metrics
from gpuship.reference import parse_reference
from gpuship.report import Report

CANDIDATE, STABLE = "candidate", "stable"


@dataclass(frozen=True)
class ProbeRequest:
    """What to probe: an image (and the stable one), or a server already running at a URL."""

    candidate: str
    stable: str | None
    url: str | None
    config: ProbeConfig
    base: Path
    environ: Mapping[str, str]
    limits: Limits = DEFAULT_LIMITS


def stable_of(candidate: str, tag: str | None) -> str | None:
    """The image `tag` names in the candidate's repository (None when there is no tag)."""
    if tag is None:
        return None
    reference = parse_reference(candidate.removeprefix("docker://"))
    return str(reference.repository.tag(tag))


def probe(request: ProbeRequest, progress: Callable[[str], None]) -> Report:
    """Run the trials, judge the candidate, and build the report."""
    config = request.config
    planned = config.planned_arrivals()
    if planned > request.limits.probe_max_arrivals:
        raise LimitExceeded(
            "probe.profile and probe.shortage",
            f"rate x duration schedules {planned:.3g} requests per trial",
            "probe-max-arrivals",
            request.limits.probe_max_arrivals,
        )
    requests = load_requests(
        config.request, config.request.requests_file, request.base, limits=request.limits
    )
    shortage = requests
    if config.shortage.requests_file is not None:
        shortage = load_requests(
            config.request,
            config.shortage.requests_file,
            request.base,
            field=SHORTAGE_FIELD,
            limits=request.limits,
        )
    workload = Workload(
        requests=tuple(requests),
        shortage_requests=tuple(shortage),
        load_steps=load_steps(config),
        series_points=request.limits.probe_series_max_points,
    )
    checks: list[GateCheck] = []
    images = [(CANDIDATE, request.candidate)]
    with contextlib.ExitStack() as stack:
        if request.url is not None:
            launch = _fixed_url(request.url)
        else:
            engine = stack.enter_context(Engine.connect(request.environ))
            launch = _docker_launch(engine, config)
            if request.stable:
                missing = _pull_failure(engine, request.stable)
                if missing is None:
                    images.append((STABLE, request.stable))
                else:
                    checks.append(
                        GateCheck(rules.NO_COMPARISON, GateStatus.WARN, "stable", missing)
                    )
        scrape = _scraper(config, request.limits)
        trials = run_trials(
            images, config, workload, launch, _sampler(config), scrape, _drive(config), progress
        )
    results = [
        image_figures(role, [t for t in trials if t.role == role], workload.load_steps, config)
        for role, _ in images
    ]
    stable = results[1] if len(results) > 1 else None
    found, comparisons = judge(results[0], stable, config)
    return probe_report("probe", results, checks + found, comparisons, trials)


def service_spec(image: str, target: TargetConfig, network: str) -> ServiceSpec:
    """How the Docker adapter starts `image` for probe.target."""
    return ServiceSpec(
        image=image.removeprefix("docker://"),
        port=target.port,
        network=network,
        gpus=target.gpus if isinstance(target.gpus, str) else tuple(target.gpus),
        env=target.env,
        command=None if target.command is None else tuple(target.command),
        volumes=tuple(target.volumes),
        shm_size=target.shm_size,
        memory_limit=target.memory_limit,
    )


def _pull_failure(engine: Engine, image: str) -> str | None:
    """None when the engine holds the image or can pull it; else why it cannot."""
    try:
        engine.inspect_image(image)
        return None
    except ImageMissing:
        pass
    except EngineRefused as error:
        return f"{image} not compared: {error.message}"
    try:
        engine.pull(image)
    except EngineRefused as error:
        return f"{image} not compared: cannot pull it ({error.message})"
    return None


def _docker_launch(engine: Engine, config: ProbeConfig) -> Callable[[str], Any]:
    target = config.target
    run_id = uuid.uuid4().hex[:12]

    @contextlib.contextmanager
    def launch(image: str) -> Iterator[tuple[Running, float]]:
        spec = service_spec(image, target, target.network)
        with running_service(engine, spec, run_id) as service:
            ready = service.wait_ready(
                target.health_path if target.ready_log is None else None,
                target.ready_log,
                target.startup_timeout_s,
            )
            yield service, ready

    return launch


class _UrlTarget:
    """A server someone else started: reachable or not is all that can be seen of it."""

    def __init__(self, url: str) -> None:
        target = Target.from_url(url)
        self.address = (target.host, target.port)
        self.started: float | None = None

    def state(self) -> ContainerState:
        return ContainerState(running=True, exit_code=None, oom_killed=False)

    def logs(self) -> str:
        return ""

    def pids(self) -> frozenset[int] | None:
        return None


def _fixed_url(url: str) -> Callable[[str], Any]:
    @contextlib.contextmanager
    def launch(image: str) -> Iterator[tuple[Running, float]]:
        yield _UrlTarget(url), 0.0

    return launch


def _sampler(config: ProbeConfig) -> Callable[[Any], Any]:
    gpus = config.target.gpus
    # Sample the GPUs the container gets when they are named by index; else all of them.
    indexes = [int(g) for g in gpus if g.isdigit()] if isinstance(gpus, list) else []

    def sample(pids: Callable[[], frozenset[int] | None]) -> Any:
        return sampling(config.sample_interval_ms / 1000, pids, indexes)

    return sample


def metrics_url(config: ProbeConfig, address: tuple[str, int]) -> str:
    """Where the server's Prometheus endpoint is: probe.metrics-url, a path on the server's
    own address, or by default /metrics there (where vLLM and TGI serve it)."""
    given = config.metrics_url or "/metrics"
    return given if not given.startswith("/") else f"http://{address[0]}:{address[1]}{given}"


def _scraper(config: ProbeConfig, limits: Limits) -> Callable[[Running], Any]:
    names = queue_metrics(config.queue_metric)

    def scrape(running: Running) -> Any:
        url = metrics_url(config, running.address)
        interval = config.metrics_interval_ms / 1000
        return scraping(
            url, names, interval, limits.metrics_max_bytes, limits.probe_series_max_points
        )

    return scrape


def _drive(
    config: ProbeConfig,
) -> Callable[[Target, Sequence[Arrival], Sequence[RequestSpec], int], LoadResult]:
    expected = frozenset(config.request.expected_status)

    def drive(
        target: Target, arrivals: Sequence[Arrival], requests: Sequence[RequestSpec], cap: int
    ) -> LoadResult:
        return run_load(target, arrivals, requests, cap, config.request.timeout_s, expected)

    return drive
