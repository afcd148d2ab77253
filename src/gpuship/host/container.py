"""The NVIDIA Container Toolkit on this host: CDI specs, the units that regenerate them at boot,
and the toolkit's binaries.

An adapter: it only reads (spec files, unit files, `--version` output) and returns plain
readings. Anything missing is a reading ("no CDI spec", a tool not on PATH), never an
exception, because a host without them is a fact the verdict judges. What `docker info` says
is the Docker adapter's reading (`docker/info.py`); `verify/host.py` puts the two together.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path

import yaml

from gpuship.compat.container import CdiSpecReading, ToolReading, UnitReading
from gpuship.documents import load_json, load_yaml, read_file
from gpuship.errors import InputError
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


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "unknown error"
