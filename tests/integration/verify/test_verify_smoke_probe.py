"""The --smoke probe script itself, run by a real /bin/sh and python on this GPU-less machine:
the device-missing and no-CUDA paths (passing paths need a GPU runner)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gpuship.verify.smoke import PROBE_SCRIPT, PYTHON_PROBE

pytestmark = pytest.mark.integration


def test_probe_reports_a_container_without_gpu_devices() -> None:
    done = subprocess.run(
        ["/bin/sh", "-c", PROBE_SCRIPT],
        env={"PATH": "/usr/bin:/bin", "GPUSHIPPYTHON_PROBE": PYTHON_PROBE},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 11
    assert "gpuship-smoke: no /dev/nvidia* device in the container" in done.stdout


def test_python_probe_reports_missing_libcuda() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PYTHON_PROBE], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 13
    assert "libcuda.so.1 not in the container" in done.stdout
