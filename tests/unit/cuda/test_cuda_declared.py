"""cuda.declared: the one reader of what an image's env and labels say about CUDA."""

from __future__ import annotations

import pytest

from gpuship.cuda.declared import Claim, claimed_cuda, claims_enforced, cuda_claims, declared_cuda
from gpuship.cuda.version import Version
from gpuship.labels import LABEL_CUDA, LABEL_MIN_DRIVER

STOCK_12_4 = {
    "CUDA_VERSION": "12.4.1",
    "NVIDIA_REQUIRE_CUDA": "cuda>=12.4 brand=tesla,driver>=470,driver<471",
}


@pytest.mark.parametrize(
    ("env", "labels", "expected"),
    [
        (STOCK_12_4, {LABEL_CUDA: "12.8"}, ("12.8", f"label {LABEL_CUDA}")),
        (STOCK_12_4, {}, ("12.4.1", "env CUDA_VERSION")),
        ({"NVIDIA_REQUIRE_CUDA": "cuda>=12.2"}, {}, ("12.2", "env NVIDIA_REQUIRE_CUDA")),
        ({"NVIDIA_REQUIRE_CUDA": "brand=tesla,driver>=470"}, {}, (None, None)),
        ({}, {}, (None, None)),
    ],
)
def test_declared_cuda_prefers_label_then_toolkit_then_requirement(
    env: dict[str, str], labels: dict[str, str], expected: tuple[str | None, str | None]
) -> None:
    assert declared_cuda(env, labels.get(LABEL_CUDA)) == expected


def test_claims_follow_nvidia_container_cli() -> None:
    # CUDA_VERSION implies a requirement only when NVIDIA_REQUIRE_CUDA is absent.
    assert cuda_claims(STOCK_12_4, {}) == (
        Claim("NVIDIA_REQUIRE_CUDA", STOCK_12_4["NVIDIA_REQUIRE_CUDA"]),
    )
    assert cuda_claims({"CUDA_VERSION": "11.8.0"}, {LABEL_MIN_DRIVER: "520.61.05"}) == (
        Claim("CUDA_VERSION", "11.8.0"),
        Claim(LABEL_MIN_DRIVER, "520.61.05"),
    )


def test_claimed_cuda_takes_the_highest_floor_and_ignores_drivers() -> None:
    both = Claim("NVIDIA_REQUIRE_CUDA", "cuda>=12.2 brand=tesla,cuda>=12.4")
    assert claimed_cuda(both) == Version.parse("12.4")
    assert claimed_cuda(Claim("CUDA_VERSION", "12.4.1")) == Version.parse("12.4")
    assert claimed_cuda(Claim(LABEL_MIN_DRIVER, "550.54.15")) is None
    assert claimed_cuda(Claim("CUDA_VERSION", "not-a-version")) is None


@pytest.mark.parametrize(
    ("value", "enforced"),
    [("1", False), ("true", False), ("TRUE", False), ("0", True), ("yes", True), (None, True)],
)
def test_disable_require_uses_go_boolean_parsing(value: str | None, enforced: bool) -> None:
    env = {} if value is None else {"NVIDIA_DISABLE_REQUIRE": value}
    assert claims_enforced(env) is enforced
