"""What every command receives besides its own arguments."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gpuship.config.model import GpushipConfig


@dataclass(frozen=True)
class Context:
    """The validated config, where it came from, and the process environment."""

    config: GpushipConfig
    config_path: Path | None
    environ: Mapping[str, str]
