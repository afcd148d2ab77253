"""Fixtures for the image integration tests: a real GPU library built by nvcc, once."""

from __future__ import annotations

from pathlib import Path

import pytest

from bed.nvcc import build_gpu_library

# SASS for sm_75, sm_80, sm_90 and PTX for compute_90: what the parser must report.
GENCODES = (
    "arch=compute_75,code=sm_75",
    "arch=compute_80,code=sm_80",
    "arch=compute_90,code=[sm_90,compute_90]",
)


@pytest.fixture(scope="session")
def nvcc_library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A shared object with a `.nv_fatbin` for GENCODES, compiled by the real nvcc."""
    return build_gpu_library(tmp_path_factory.mktemp("nvcc"), GENCODES)
