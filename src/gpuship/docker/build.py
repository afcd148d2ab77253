"""What one image build asks of Docker, whichever builder runs it: the engine's classic builder
(`builder/engine.py`, through the docker SDK) or BuildKit (`docker/buildx.py`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class BuildRequest:
    """Everything one build of one cell needs."""

    context: Path
    dockerfile: Path
    tags: tuple[str, ...]
    build_args: Mapping[str, str]
    labels: Mapping[str, str]
    target: str | None = None
    platform: str | None = None
    network: str | None = None
