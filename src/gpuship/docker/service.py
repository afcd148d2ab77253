"""Run an image as a service for the probe: start it with GPUs, find its port, watch it, remove it.

Built on `Engine` and `Container` (engine.py), the one way gpuship reaches the engine. The
container is removed however the run ends: success, failure, timeout, and cancellation (a
cancelled GitHub job sends SIGINT, then SIGTERM; the CLI's one signal handler raises both as
`Interrupted`, a KeyboardInterrupt, so the clean-up below runs too; a signal arriving during
the removal is held until the container is gone, then raised). Every container carries
the label `io.gpuship.probe` so one left by a killed runner can be found and removed.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gpuship.docker.engine import (
    Container,
    ContainerOptions,
    Engine,
    EngineRefused,
    GpuRequest,
    ImageMissing,
)
from gpuship.errors import DockerUnavailable, InputError
from gpuship.signals import stop_signals_held

PROBE_LABEL = "io.gpuship.probe"
_POLL_S = 0.2


@dataclass(frozen=True)
class ServiceSpec:
    """How to start the image: port, network, GPUs, environment, mounts, limits."""

    image: str
    port: int
    network: str = "bridge"
    gpus: str | tuple[str, ...] = "all"
    env: Mapping[str, str] = field(default_factory=dict)
    command: tuple[str, ...] | None = None
    volumes: tuple[str, ...] = ()
    shm_size: str | None = None
    memory_limit: str | None = None


@dataclass(frozen=True)
class ContainerState:
    """The container now: running, or how it ended (exit code, killed by the host's OOM)."""

    running: bool
    exit_code: int | None
    oom_killed: bool
    error: str = ""


class NotReady(Exception):
    """The service did not become ready; carries why, its state and the end of its log."""

    def __init__(self, reason: str, state: ContainerState, log: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.state = state
        self.log = log


class Service:
    """A started container, the address (host, port) its port is reached at, and when it was
    started (`time.monotonic()` just before the engine was asked to start it)."""

    def __init__(self, container: Container, address: tuple[str, int], started: float) -> None:
        self._container = container
        self.address = address
        self.started = started

    def state(self) -> ContainerState:
        state = self._container.inspect().get("State", {})
        running = bool(state.get("Running"))
        return ContainerState(
            running=running,
            exit_code=None if running else int(state.get("ExitCode", -1)),
            oom_killed=bool(state.get("OOMKilled")),
            error=str(state.get("Error") or ""),
        )

    def logs(self, timestamps: bool = False) -> str:
        return self._container.logs(timestamps=timestamps)

    def pids(self) -> frozenset[int] | None:
        """Host pids of the container's processes (its pid namespace); None when not visible."""
        init = int(self._container.inspect().get("State", {}).get("Pid") or 0)
        return namespace_pids(init) if init else None

    def wait_ready(self, health_path: str | None, ready_log: str | None, timeout: float) -> float:
        """Seconds until ready: GET health_path answers 2xx, or a log line matches ready_log."""
        started = time.monotonic()
        pattern = re.compile(ready_log) if ready_log else None
        while time.monotonic() - started < timeout:
            state = self.state()
            if not state.running:
                raise NotReady("the container exited while starting", state, self.logs())
            if pattern is not None and any(
                pattern.search(line) for line in self.logs().split("\n")
            ):
                return time.monotonic() - started
            if pattern is None and health_path and _healthy(self.address, health_path):
                return time.monotonic() - started
            time.sleep(_POLL_S)
        raise NotReady(f"not ready after {timeout:g} s", self.state(), self.logs())

    def wait_exit(self, timeout: float) -> ContainerState | None:
        """How the container ended, or None when it still runs after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            state = self.state()
            if not state.running:
                return state
            time.sleep(_POLL_S)
        return None


def namespace_pids(init_pid: int, proc: Path = Path("/proc")) -> frozenset[int] | None:
    """Every process sharing `init_pid`'s pid namespace, read from /proc."""
    try:
        namespace = os.readlink(proc / str(init_pid) / "ns" / "pid")
    except OSError:
        return None
    found = set()
    for entry in proc.iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if os.readlink(entry / "ns" / "pid") == namespace:
                    found.add(int(entry.name))
    return frozenset(found)


def _healthy(address: tuple[str, int], path: str) -> bool:
    url = f"http://{address[0]}:{address[1]}{path}"
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return 200 <= int(response.status) < 300
    except (urllib.error.URLError, OSError, ValueError):
        return False


@contextlib.contextmanager
def running_service(engine: Engine, spec: ServiceSpec, run_id: str) -> Iterator[Service]:
    """Start the image; yield it with its address; always remove the container."""
    try:
        container = _create(engine, spec, run_id)
    except ImageMissing:
        raise InputError(f"{spec.image}: image not found locally or in its registry") from None
    except EngineRefused as error:
        message = f"{spec.image}: the engine refused to create it: {error.message}"
        raise DockerUnavailable(message) from None
    try:
        started = time.monotonic()
        try:
            container.start()
        except EngineRefused as error:
            raise DockerUnavailable(f"{spec.image} did not start: {error.message}") from None
        yield Service(container, _address(container, spec), started)
    finally:
        # A second signal during the removal (GitHub's SIGTERM after its SIGINT) would abandon
        # it and leave the container running: it waits until the container is gone.
        with stop_signals_held(), contextlib.suppress(EngineRefused, DockerUnavailable):
            container.remove()


def _create(engine: Engine, spec: ServiceSpec, run_id: str) -> Container:
    gpus = None
    if spec.gpus != "none":
        gpus = GpuRequest(() if isinstance(spec.gpus, str) else spec.gpus)
    options = ContainerOptions(
        publish=spec.port if spec.network == "bridge" else None,
        volumes=spec.volumes,
        labels={PROBE_LABEL: run_id},
        shm_size=spec.shm_size,
        memory_limit=spec.memory_limit,
    )

    def create() -> Container:
        return engine.create_container(
            spec.image,
            command=spec.command,
            environment=spec.env,
            gpus=gpus,
            network_mode=spec.network,
            options=options,
        )

    try:
        return create()
    except ImageMissing:
        # The probe runs the image, so it needs it locally: pull like `docker run` would.
        engine.pull(spec.image)
        return create()


def _address(container: Container, spec: ServiceSpec) -> tuple[str, int]:
    """Where the service's port is reached from the host."""
    if spec.network != "bridge":
        return "127.0.0.1", spec.port
    ports = container.inspect().get("NetworkSettings", {}).get("Ports") or {}
    bindings = ports.get(f"{spec.port}/tcp") or ()
    if not bindings:
        raise DockerUnavailable(
            f"the engine published no host port for {spec.port}/tcp (is its bridge network "
            "disabled?); set probe.target.network: host"
        )
    return "127.0.0.1", int(bindings[0]["HostPort"])
