"""Running `python -m gpuship` against a described host, shared by the verify CLI tests."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from json_results import check_output

# The `nvml_host` fixture: host description -> environment for a subprocess.
HostEnv = Callable[[Mapping[str, Any]], dict[str, str]]
# An engine address nothing answers on: the host has no Docker.
NO_DOCKER = {"DOCKER_HOST": "unix:///nonexistent/docker.sock"}


def gpuship(args: list[str], env: Mapping[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """`gpuship ARGS` in a subprocess, so it loads the NVML library `env` points at; JSON
    output is checked against the command's published schema."""
    done = subprocess.run(
        [sys.executable, "-m", "gpuship", *args],
        env=dict(env),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    check_output(args, done.stdout)
    return done
