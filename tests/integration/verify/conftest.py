"""Fixtures of the verify integration tests that need containers "with a GPU" (bed.gpu_service):
a dockerd of their own, restartable, that accepts --gpus."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from verify_cli import HostEnv

from bed.docker_engine import DockerEngine, RestartableEngine, restartable_docker_engine
from bed.gpu_service import build_gpu_service_image, hook_dir
from bed.process import require_binary

CACHE = Path(__file__).resolve().parents[2] / ".build"


@pytest.fixture(scope="module")
def hooks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The runtime hook stand-in's directory: on dockerd's PATH and on gpuship's (the audit
    reads the toolkit binaries from PATH, GSV101)."""
    return hook_dir(tmp_path_factory.mktemp("hook"))


@pytest.fixture(scope="module")
def gpu_docker(
    tmp_path_factory: pytest.TempPathFactory, hooks: Path
) -> Iterator[RestartableEngine]:
    """A dockerd of its own (it gets restarted) that accepts --gpus, with the service image."""
    require_binary("dockerd")
    require_binary("gcc")
    logs = tmp_path_factory.mktemp("gpu-dockerd")
    with restartable_docker_engine(logs, {}, (hooks,)) as engine:
        build_gpu_service_image(engine.engine, CACHE)
        yield engine


@pytest.fixture
def gpu_host(nvml_host: HostEnv, hooks: Path) -> HostEnv:
    """The described host with the hook stand-in on PATH."""
    return lambda description: (env := nvml_host(description)) | {"PATH": f"{hooks}:{env['PATH']}"}


@pytest.fixture
def gpu_engine(gpu_docker: RestartableEngine) -> Iterator[DockerEngine]:
    yield gpu_docker.engine
    for container in gpu_docker.engine.client.containers.list(all=True):
        container.remove(force=True)
