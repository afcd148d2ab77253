"""Fixtures for the image unit tests: a real GPU library built with nvcc, once per session."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

NVCC = "/usr/local/bin/nvcc"
KERNEL = """
__global__ void scale(float* data, float by) { data[threadIdx.x] *= by; }
extern "C" void run_scale(float* data) { scale<<<1, 32>>>(data, 2.0f); }
"""
# SASS for sm_75, sm_80, sm_90 and PTX for compute_90: what the parser must report.
GENCODES = (
    "arch=compute_75,code=sm_75",
    "arch=compute_80,code=sm_80",
    "arch=compute_90,code=[sm_90,compute_90]",
)


# Arch-specific and family-specific targets (CUDA 12.9+ for `f`).
VARIANT_GENCODES = (
    "arch=compute_90a,code=[sm_90a,compute_90a]",
    "arch=compute_120f,code=sm_120f",
)


def _build(directory: Path, gencodes: tuple[str, ...]) -> Path:
    if not Path(NVCC).exists() and shutil.which("nvcc") is None:
        pytest.skip("nvcc is not installed")
    nvcc = NVCC if Path(NVCC).exists() else "nvcc"
    source = directory / "scale.cu"
    source.write_text(KERNEL)
    output = directory / "libscale.so"
    command = [nvcc, "-shared", "-Xcompiler", "-fPIC", "-o", str(output), str(source)]
    for gencode in gencodes:
        command += ["-gencode", gencode]
    subprocess.run(command, check=True, capture_output=True, timeout=300)
    return output


@pytest.fixture(scope="session")
def nvcc_library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A shared object with a `.nv_fatbin` for GENCODES, compiled by the real nvcc."""
    return _build(tmp_path_factory.mktemp("nvcc"), GENCODES)


@pytest.fixture(scope="session")
def nvcc_variant_library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A shared object compiled for VARIANT_GENCODES (`a` and `f` targets)."""
    return _build(tmp_path_factory.mktemp("nvcc-variants"), VARIANT_GENCODES)
