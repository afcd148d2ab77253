"""An image's GPU targets: a list (`[sm_80, sm_90]`, `"8.6"`, `9.0+PTX`) or a fleet file.

A fleet file is YAML or JSON naming the GPUs the image must run on, by NVML name or compute
capability; the targets are their compute capabilities (SASS for each)::

    gpus: ["NVIDIA A100-SXM4-80GB", "H100", "8.6"]

A top-level list is accepted too. GPU names are looked up in the knowledge base; a name it
does not know is an error naming the file, never guessed.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import yaml

from gpuship.cuda.arch import ArchTarget, ComputeCapability, parse_arch_list
from gpuship.cuda.errors import InvalidVersion, UnknownVersion
from gpuship.cuda.gpus import gpu_compute_capability
from gpuship.documents import load_yaml, read_file
from gpuship.errors import ConfigError, InputError
from gpuship.limits import DEFAULT_LIMITS, Limits
from gpuship.matrix.config import ImageConfig


def image_targets(
    image: ImageConfig, project_dir: Path, limits: Limits = DEFAULT_LIMITS
) -> tuple[ArchTarget, ...]:
    """The parsed targets of `image` (empty when it declares none)."""
    where = f"images[{image.name}].targets"
    if image.targets is None:
        return ()
    if isinstance(image.targets, str):
        return _fleet_targets(project_dir / image.targets, where, limits)
    return _parse(image.targets, where)


def _parse(items: Sequence[str], where: str) -> tuple[ArchTarget, ...]:
    try:
        return tuple(parse_arch_list(list(items)))
    except InvalidVersion as exc:
        raise ConfigError(f"{where}: {exc}") from None


def _fleet_targets(path: Path, where: str, limits: Limits) -> tuple[ArchTarget, ...]:
    try:
        text = read_file(path, "fleet file", limits, "yaml_max_bytes").decode("utf-8")
        data = load_yaml(text, str(path), limits)
    except (InputError, UnicodeDecodeError) as exc:  # unreadable, not a file, past a limit
        raise ConfigError(f"{where}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {str(exc).splitlines()[0]}") from None
    gpus = data.get("gpus") if isinstance(data, dict) else data
    if not isinstance(gpus, list) or not gpus or not all(isinstance(g, str) for g in gpus):
        raise ConfigError(f"{path}: a fleet file holds 'gpus:', a non-empty list of GPU names")
    capabilities: set[ComputeCapability] = set()
    for gpu in gpus:
        try:
            capabilities.add(ComputeCapability.parse(gpu))
            continue
        except InvalidVersion:
            pass
        try:
            capabilities.add(gpu_compute_capability(gpu))
        except UnknownVersion:
            raise ConfigError(
                f"{path}: GPU '{gpu}' is not in the knowledge base; give its compute "
                'capability instead (e.g. "8.6")'
            ) from None
    return _parse([str(cc) for cc in sorted(capabilities)], str(path))
