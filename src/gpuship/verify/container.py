"""Container side of a GPU host: Docker engine, NVIDIA runtime, CDI specs, toolkit binaries, OS.

An adapter: it only reads (the engine through the docker SDK, spec files, `--version` output)
and returns plain readings. Anything missing is a reading ("docker not reachable", "no CDI
spec"), never an exception, because a host without Docker is a fact the verdict judges.
"""

from __future__ import annotations

import platform
import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from gpuship.compat.config import DEFAULT_CDI_SPEC_DIRS, DEFAULT_UNIT_DIRS
from gpuship.compat.container import (
    CdiSpecReading,
    ContainerReadings,
    DockerReading,
    SystemReading,
    ToolReading,
    UnitReading,
)
from gpuship.documents import load_json, load_yaml, read_file
from gpuship.errors import DockerUnavailable, InputError
from gpuship.limits import DEFAULT_LIMITS

# The binaries that decide whether a container can reach the GPUs (reference cuda-compat.md
# §7.3-7.4): moby registers the `--gpus` device driver only when the runtime hook is on PATH.
TOOLKIT_BINARIES = (
    "nvidia-ctk",
    "nvidia-container-cli",
    "nvidia-container-runtime",
    "nvidia-container-runtime-hook",
)
_VERSION_PATTERN = re.compile(r"\b(\d+\.\d+(?:\.\d+)*)\b")
_VERSION_TIMEOUT_S = 10
# How a spec written by `nvidia-ctk cdi generate` names the driver it was generated for: the
# versioned driver libraries it mounts (`libcuda.so.550.54.15`) and the `enable-cuda-compat`
# hook's `--host-driver-version=550.54.15` (nvidia-container-toolkit
# cmd/nvidia-ctk/cdi/generate/generate_test.go). A driver update renames those files. Driver
# majors have three digits; other libraries' own versions (libnvidia-egl-wayland.so.1.1.13) do not.
_SPEC_DRIVER_PATTERN = re.compile(
    r"(?:lib(?:cuda|nvidia-[a-z0-9-]+)\.so\.|--host-driver-version=)(\d{3,}\.\d+(?:\.\d+)?)\b"
)
# What regenerates a CDI spec at boot: the toolkit's own service (v1.18.0 on,
# deployments/systemd/nvidia-cdi-refresh.service) or any unit that runs `nvidia-ctk cdi generate`.
CDI_REFRESH_UNIT = "nvidia-cdi-refresh.service"
_GENERATE_COMMAND = re.compile(r"nvidia-ctk\s+(?:[^\n]*\s)?cdi\s+generate")
# A unit file is a few KiB; more than this is not one to read.
_UNIT_FILE_LIMIT = 1 << 20


def read_container_side(
    environ: Mapping[str, str],
    cdi_spec_dirs: Iterable[str] = DEFAULT_CDI_SPEC_DIRS,
    unit_dirs: Iterable[str] = DEFAULT_UNIT_DIRS,
) -> ContainerReadings:
    """Read the Docker engine, CDI spec dirs (configured plus the engine's), toolkit tools and
    the systemd units that regenerate CDI specs."""
    docker_reading = read_docker(environ)
    dirs = list(dict.fromkeys([*cdi_spec_dirs, *docker_reading.cdi_spec_dirs]))
    return ContainerReadings(
        docker=docker_reading,
        cdi_specs=read_cdi_specs(dirs),
        tools=[read_tool(name, environ) for name in TOOLKIT_BINARIES],
        cdi_refresh_units=read_cdi_refresh_units(unit_dirs),
    )


def read_docker(environ: Mapping[str, str]) -> DockerReading:
    """`docker info` through the SDK; an unreachable engine is a reading, not an error."""
    from gpuship.docker.engine import Engine, EngineRefused, engine_address

    try:
        with Engine.connect(environ, timeout=10) as engine:
            info = engine.info()
    except (DockerUnavailable, EngineRefused):
        return DockerReading(
            reachable=False,
            error=f"cannot connect to the Docker engine at {engine_address(environ)}",
        )
    return docker_reading_from_info(info)


def docker_reading_from_info(info: Mapping[str, Any]) -> DockerReading:
    """Turn the engine's `/info` answer into a reading (pure, so it is tested on data)."""
    discovered = info.get("DiscoveredDevices") or []
    return DockerReading(
        reachable=True,
        server_version=info.get("ServerVersion"),
        runtimes=sorted((info.get("Runtimes") or {}).keys()),
        default_runtime=info.get("DefaultRuntime"),
        cdi_spec_dirs=list(info.get("CDISpecDirs") or []),
        cdi_devices=sorted(
            str(device.get("ID"))
            for device in discovered
            if isinstance(device, Mapping) and device.get("Source") == "cdi"
        ),
    )


def read_cdi_specs(directories: Iterable[str]) -> list[CdiSpecReading]:
    """Every `*.yaml`/`*.yml`/`*.json` spec in the directories, parsed for its devices."""
    specs = []
    for directory in directories:
        folder = Path(directory)
        if not folder.is_dir():
            continue
        for path in sorted(folder.iterdir()):
            if path.suffix in {".yaml", ".yml", ".json"} and path.is_file():
                specs.append(parse_cdi_spec(path))
    return specs


def parse_cdi_spec(path: Path) -> CdiSpecReading:
    """One CDI spec: `kind` plus each device name gives `kind=name` (CDI's qualified name)."""
    try:
        text = read_file(path, "CDI spec", DEFAULT_LIMITS, "yaml_max_bytes").decode("utf-8")
        where = str(path)
        if path.suffix == ".json":
            data = load_json(text, where, DEFAULT_LIMITS)
        else:
            data = load_yaml(text, where, DEFAULT_LIMITS)
    except (InputError, UnicodeDecodeError, yaml.YAMLError) as error:
        return CdiSpecReading(path=str(path), error=_first_line(str(error)))
    if not isinstance(data, Mapping) or not isinstance(data.get("kind"), str):
        return CdiSpecReading(path=str(path), error="not a CDI spec: no 'kind'")
    kind = data["kind"]
    devices = data.get("devices") or []
    names = [
        f"{kind}={device['name']}"
        for device in devices
        if isinstance(device, Mapping) and device.get("name") is not None
    ]
    versions = sorted(set(_SPEC_DRIVER_PATTERN.findall(text)))
    return CdiSpecReading(path=str(path), kind=kind, devices=names, driver_versions=versions)


def read_cdi_refresh_units(directories: Iterable[str]) -> list[UnitReading]:
    """Units in the systemd unit directories that regenerate a CDI spec: the toolkit's
    `nvidia-cdi-refresh.service`, or a service whose text runs `nvidia-ctk cdi generate`.

    Enabled = linked from a `*.wants/` directory of the first (admin) directories, which is what
    `systemctl enable` writes; reading files needs no systemd and no D-Bus.
    """
    folders = [Path(d) for d in directories if Path(d).is_dir()]
    wanted = {
        link.name
        for folder in folders
        for wants in folder.glob("*.wants")
        if wants.is_dir()
        for link in wants.iterdir()
    }
    found: dict[str, UnitReading] = {}
    for folder in folders:
        for unit in sorted(folder.glob("*.service")):
            if unit.name in found or not unit.is_file():
                continue
            if unit.name == CDI_REFRESH_UNIT or _runs_cdi_generate(unit):
                found[unit.name] = UnitReading(
                    name=unit.name, path=str(unit), enabled=unit.name in wanted
                )
    return list(found.values())


def _runs_cdi_generate(unit: Path) -> bool:
    try:
        if unit.stat().st_size > _UNIT_FILE_LIMIT:
            return False
        text = unit.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return bool(_GENERATE_COMMAND.search(text))


def read_tool(name: str, environ: Mapping[str, str]) -> ToolReading:
    """Find a binary on PATH and ask it for `--version` (first dotted number of its output)."""
    path = shutil.which(name, path=environ.get("PATH"))
    if path is None:
        return ToolReading(name=name)
    try:
        completed = subprocess.run(
            [path, "--version"],
            capture_output=True,
            text=True,
            timeout=_VERSION_TIMEOUT_S,
            check=False,
        )
        output = completed.stdout + completed.stderr
    except (OSError, subprocess.TimeoutExpired):
        return ToolReading(name=name, path=path)
    match = _VERSION_PATTERN.search(output)
    return ToolReading(name=name, path=path, version=match.group(1) if match else None)


def read_system(os_release: Path = Path("/etc/os-release")) -> SystemReading:
    """Kernel release and machine from `uname`, the OS from os-release's PRETTY_NAME."""
    return SystemReading(
        kernel=platform.release(), os=_pretty_name(os_release), machine=platform.machine()
    )


def _pretty_name(os_release: Path) -> str | None:
    try:
        lines = os_release.read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        key, _, value = line.partition("=")
        if key == "PRETTY_NAME":
            return value.strip().strip('"')
    return None


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "unknown error"
