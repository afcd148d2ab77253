"""A real Docker engine (Debian `docker.io` dockerd, run as root) private to the test session.

dockerd gets its own socket, data root, exec root, pid file and an empty daemon.json under
one short temp dir (unix socket paths are limited to 108 bytes), the vfs storage driver (works
on any filesystem, no overlay mounts), and no bridge or iptables (nothing to clean up on the
host network). It starts and supervises its own containerd under the exec root.
127.0.0.0/8 is an insecure registry by default in dockerd, so pushes to the bed registries
over plain HTTP work without configuration.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bed.process import start_service

DOCKERD_BINARY = "dockerd"
READY_TIMEOUT_S = 60.0
API_TIMEOUT_S = 120


@dataclass(frozen=True)
class DockerEngine:
    """A running engine: `host` for DOCKER_HOST, `env` for subprocesses, `client` for tests."""

    host: str
    env: dict[str, str]
    client: Any  # docker.DockerClient; docker is imported lazily so collection stays cheap
    root: Path
    log_path: Path

    def cli_env(self) -> dict[str, str]:
        """os.environ plus `env`: for running the `docker` CLI or gpuship in a subprocess."""
        return {**os.environ, **self.env}


def _pings(socket_path: Path) -> bool:
    # docker.DockerClient negotiates the API version when it is built, so readiness is
    # probed with a bare GET /_ping instead.
    if not socket_path.exists():
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(2.0)
        sock.connect(str(socket_path))
        sock.sendall(b"GET /_ping HTTP/1.0\r\nHost: docker\r\n\r\n")
        status_line = sock.recv(64).split(b"\r\n", 1)[0]
    return status_line.split(b" ")[1:2] == [b"200"]


def _mount_points_under(root: Path) -> list[str]:
    # Field 5 of /proc/self/mountinfo is the mount point; deepest first so children go first.
    prefix = str(root) + "/"
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4]
        if point.startswith(prefix):
            points.append(point)
    return sorted(points, key=len, reverse=True)


def _pids_referring_to(root: Path) -> list[int]:
    # containerd and its shims carry the bed dir in their command line; only they match it,
    # because the dir name is random and private to this session.
    marker = str(root).encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            if marker in (entry / "cmdline").read_bytes():
                pids.append(int(entry.name))
    return pids


def _clean_up(root: Path) -> None:
    """Kill what dockerd left running under `root`, unmount, and remove the dir."""
    for pid in _pids_referring_to(root):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    for point in _mount_points_under(root):
        subprocess.run(["umount", "-l", point], check=False, capture_output=True)
    shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def run_docker_engine(
    log_dir: Path, daemon_config: dict[str, Any] | None = None, path_dirs: tuple[Path, ...] = ()
) -> Iterator[DockerEngine]:
    """Run a private dockerd until the context exits, then stop it and remove its state.

    The daemon log goes to `log_dir` (pytest's kept temp dir), so it outlives the engine.
    `daemon_config` is its daemon.json; `path_dirs` go first on its PATH (where dockerd looks
    for runtimes and the NVIDIA runtime hook).
    """
    with restartable_docker_engine(log_dir, daemon_config, path_dirs) as restartable:
        yield restartable.engine


class RestartableEngine:
    """A private dockerd that a test can stop and start again on the same state: the
    simulated host restart (dockerd brings back the containers whose policy says so)."""

    def __init__(self, argv: list[str], env: dict[str, str], root: Path, log_dir: Path) -> None:
        self._argv, self._env, self._root, self._log_dir = argv, env, root, log_dir
        self._starts = 0
        self._service: Any = None
        self.engine: DockerEngine = self._start()

    def _start(self) -> DockerEngine:
        import docker

        self._starts += 1
        log = self._log_dir / (
            "dockerd.log" if self._starts == 1 else f"dockerd-{self._starts}.log"
        )
        self._service = start_service("dockerd", self._argv, log, env=self._env)
        socket_path = self._root / "docker.sock"
        self._service.wait_ready(lambda: _pings(socket_path), READY_TIMEOUT_S)
        host = f"unix://{socket_path}"
        client = docker.DockerClient(base_url=host, timeout=API_TIMEOUT_S)
        cli_config = self._root / "cli-config"
        cli_config.mkdir(exist_ok=True)
        env = {
            "DOCKER_HOST": host,
            # The docker CLI keeps logins here instead of the user's ~/.docker.
            "DOCKER_CONFIG": str(cli_config),
            # This Debian CLI has no buildx plugin; the engine's classic builder does the builds.
            "DOCKER_BUILDKIT": "0",
        }
        return DockerEngine(host=host, env=env, client=client, root=self._root, log_path=log)

    def stop(self) -> None:
        """SIGTERM: dockerd stops its containers and its containerd in order."""
        self.engine.client.close()
        self._service.stop(timeout=30.0)

    def restart(self) -> DockerEngine:
        """Stop dockerd and start it again on the same data root; the new engine."""
        self.stop()
        self.engine = self._start()
        return self.engine


@contextlib.contextmanager
def restartable_docker_engine(
    log_dir: Path, daemon_config: dict[str, Any] | None = None, path_dirs: tuple[Path, ...] = ()
) -> Iterator[RestartableEngine]:
    """Run a private dockerd that can be restarted; stopped and removed when the context exits."""
    root = Path(tempfile.mkdtemp(prefix="gsbed-", dir="/tmp"))
    daemon_json = root / "daemon.json"
    # An explicit config keeps the host's /etc/docker/daemon.json out of the bed.
    daemon_json.write_text(json.dumps(daemon_config or {}))
    argv = [
        DOCKERD_BINARY,
        "--config-file",
        str(daemon_json),
        "--storage-driver",
        "vfs",
        "--iptables=false",
        "--ip6tables=false",
        "--bridge=none",
        "-H",
        f"unix://{root / 'docker.sock'}",
        "--data-root",
        str(root / "data"),
        "--exec-root",
        str(root / "exec"),
        "--pidfile",
        str(root / "docker.pid"),
    ]
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([*map(str, path_dirs), env.get("PATH", "")])
    restartable = None
    try:
        restartable = RestartableEngine(argv, env, root, log_dir)
        yield restartable
    finally:
        if restartable is not None:
            restartable.stop()
        _clean_up(root)
