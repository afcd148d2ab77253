"""The worst image route places on Kubernetes nodes under the default
limits.regions-max-verdicts: distinct NVIDIA_REQUIRE_* driver and CUDA values chosen so the
verdicts needed come as close to the limit as they can without passing it; the time of
`passing_regions` for one platform, RUNS times (default 3).

    .venv/bin/python bench/route/regions.py
"""

from __future__ import annotations

import os
import time

from gpuship.compat.config import VerifyConfig
from gpuship.compat.needs import ImageGpuNeeds, image_needs
from gpuship.compat.regions import passing_regions
from gpuship.errors import LimitExceeded
from gpuship.limits import DEFAULT_LIMITS

LIMIT = DEFAULT_LIMITS.regions_max_verdicts


def needs(drivers: int, cudas: int) -> ImageGpuNeeds:
    terms = [f"driver>={500 + i}.{i}" for i in range(drivers)]
    terms += [f"cuda>=12.{i}" for i in range(cudas)]
    env = {"NVIDIA_REQUIRE_CUDA": "cuda>=12.0", "NVIDIA_REQUIRE_X": " ".join(terms)}
    return image_needs("hostile", env, {"io.gpuship.arch-list": "9.0"})


def verdicts(image: ImageGpuNeeds) -> int:
    try:
        passing_regions(image, VerifyConfig(), "linux/amd64", max_verdicts=1)
    except LimitExceeded as error:
        return int(str(error).split(" takes ")[1].split()[0])
    return 1


def worst() -> tuple[int, int, int]:
    """(driver values, CUDA values, verdicts): the most verdicts not past the limit."""
    best = (0, 0, 0)
    for cudas in range(0, 40, 2):
        drivers = 0
        while verdicts(needs(drivers + 1, cudas)) <= LIMIT:
            drivers += 1
        count = verdicts(needs(drivers, cudas))
        if count > best[2]:
            best = (drivers, cudas, count)
    return best


if __name__ == "__main__":
    drivers, cudas, count = worst()
    print(f"limit {LIMIT}: {drivers} driver + {cudas} CUDA values -> {count} verdicts")
    image = needs(drivers, cudas)
    for _ in range(int(os.environ.get("RUNS", "3"))):
        start = time.perf_counter()
        passing_regions(image, VerifyConfig(), "linux/amd64")
        print(f"{time.perf_counter() - start:.2f} s")
