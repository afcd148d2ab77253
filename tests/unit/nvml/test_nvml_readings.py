"""NVML reading models: derived values and strictness."""

from __future__ import annotations

import pydantic
import pytest

from gpuship.compat.readings import GpuReading, NvmlReadings


def reading(cc: str) -> GpuReading:
    return GpuReading(
        index=0,
        name="GPU",
        uuid="GPU-0",
        brand="Nvidia",
        compute_capability=cc,
        memory_total_bytes=3 * 2**30,
    )


@pytest.mark.parametrize(("cc", "sm"), [("7.5", 75), ("9.0", 90), ("12.0", 120), ("10.3", 103)])
def test_sm_number(cc: str, sm: int) -> None:
    assert reading(cc).sm == sm


def test_memory_in_gib_and_driver_branch() -> None:
    assert reading("8.0").memory_total_gib == 3
    readings = NvmlReadings(driver_version="535.230.02", cuda_driver_version="12.2", gpus=[])
    assert readings.driver_branch == 535


def test_unknown_fields_are_rejected() -> None:
    with pytest.raises(pydantic.ValidationError):
        NvmlReadings.model_validate(
            {"driver_version": "1", "cuda_driver_version": "1.0", "gpus": [], "extra": 1}
        )
