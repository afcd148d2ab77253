"""Running `python -m gpuship` against a described host, shared by the verify CLI tests."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

# The `nvml_host` fixture: host description -> environment for a subprocess.
HostEnv = Callable[[Mapping[str, Any]], dict[str, str]]
# An engine address nothing answers on: the host has no Docker.
NO_DOCKER = {"DOCKER_HOST": "unix:///nonexistent/docker.sock"}


def gpuship(args: list[str], env: Mapping[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """`gpuship ARGS` in a subprocess, so it loads the NVML library `env` points at."""
    return subprocess.run(
        [sys.executable, "-m", "gpuship", *args],
        env=dict(env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
