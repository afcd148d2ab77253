"""limits.regions-max-verdicts: an image whose NVIDIA_REQUIRE_* values cut node space into
more cases than the limit is refused (exit 2, naming the image) before any verdict runs;
at the limit it is placed. Hostile registry images make a few KB of such values."""

from __future__ import annotations

import pytest

from gpuship.compat.config import VerifyConfig
from gpuship.compat.needs import image_needs
from gpuship.compat.regions import passing_regions
from gpuship.errors import EXIT_USAGE, LimitExceeded
from gpuship.limits import DEFAULT_LIMITS

IMAGE = "registry.example/hostile:1"


def hostile(drivers: int, cudas: int) -> dict[str, str]:
    """Distinct driver and CUDA values, each adding cuts."""
    terms = [f"driver>={500 + i}.{i}" for i in range(drivers)]
    terms += [f"cuda>=12.{i}" for i in range(cudas)]
    return {"NVIDIA_REQUIRE_CUDA": "cuda>=12.0", "NVIDIA_REQUIRE_X": " ".join(terms)}


def verdicts_needed(env: dict[str, str]) -> int:
    """Read back from the error at a limit of 1 (the message states the count)."""
    needs = image_needs(IMAGE, env, {"io.gpuship.arch-list": "9.0"})
    with pytest.raises(LimitExceeded) as caught:
        passing_regions(needs, VerifyConfig(), "linux/amd64", max_verdicts=1)
    return int(str(caught.value).split(" takes ")[1].split()[0])


def test_at_the_limit_the_image_is_placed_and_past_it_refused_naming_the_image() -> None:
    env = hostile(drivers=6, cudas=3)
    needs = image_needs(IMAGE, env, {"io.gpuship.arch-list": "9.0"})
    count = verdicts_needed(env)
    assert passing_regions(needs, VerifyConfig(), "linux/amd64", max_verdicts=count)
    with pytest.raises(LimitExceeded) as caught:
        passing_regions(needs, VerifyConfig(), "linux/amd64", max_verdicts=count - 1)
    message = str(caught.value)
    assert message.startswith(f"{IMAGE}: placing it on linux/amd64 nodes takes {count} ")
    assert "limits.regions-max-verdicts" in message
    assert caught.value.exit_code == EXIT_USAGE


def test_the_default_refuses_many_distinct_values_and_places_stock_images() -> None:
    # The reviewer's case (160 driver, 40 CUDA values) took 45 s per platform before.
    assert verdicts_needed(hostile(drivers=160, cudas=40)) > DEFAULT_LIMITS.regions_max_verdicts
    stock = {
        "NVIDIA_REQUIRE_CUDA": "cuda>=12.4 brand=tesla,driver>=470,driver<471 "
        "brand=unknown,driver>=470,driver<471 brand=nvidia,driver>=470,driver<471 "
        "brand=tesla,driver>=535,driver<536 brand=geforce,driver>=535,driver<536"
    }
    assert verdicts_needed(stock) < DEFAULT_LIMITS.regions_max_verdicts // 5
