"""Image needs from an image config: labels first, then a scan, then stock nvidia/cuda
variables; the CUDA a scanned content needs against the image's claims."""

from __future__ import annotations

import pytest
from require_values import IMAGES

from gpuship.compat.needs import (
    ImageScan,
    content_cuda,
    env_from_list,
    image_needs,
    needs_from_config,
)
from gpuship.cuda.drivers import min_driver_for
from gpuship.errors import InputError
from gpuship.image_result import CudaEvidence

TORCH_128 = CudaEvidence("torch", "12.8", "/site-packages/torch/version.py")
BASE_124 = CudaEvidence("CUDA_VERSION", "12.4", "env CUDA_VERSION")


def config_of(env: dict[str, str], labels: dict[str, str] | None = None) -> dict[str, object]:
    return {
        "architecture": "amd64",
        "os": "linux",
        "config": {"Env": [f"{k}={v}" for k, v in env.items()], "Labels": labels},
    }


def test_stock_image_needs_come_from_its_env() -> None:
    needs = needs_from_config("img", config_of(IMAGES["12.4.1"]))
    assert needs.cuda == "12.4.1"
    assert needs.cuda_source == "env CUDA_VERSION"
    assert needs.compat_cuda == "12.4"
    assert needs.arch_targets is None
    assert needs.env["NVIDIA_REQUIRE_CUDA"].startswith("cuda>=12.4 brand=tesla")


def test_labels_win_over_env() -> None:
    labels = {
        "io.gpuship.cuda": "12.8",
        "io.gpuship.min-driver": "570.26",
        "io.gpuship.arch-list": "8.0;9.0;12.0+PTX",
    }
    needs = needs_from_config("img", config_of(IMAGES["12.4.1"], labels))
    assert (needs.cuda, needs.cuda_source) == ("12.8", "label io.gpuship.cuda")
    assert needs.min_driver == "570.26"
    assert needs.arch_targets is not None
    names = {str(t) for t in needs.arch_targets}
    assert {"sm_80", "sm_90", "sm_120", "compute_120"} <= names


def test_require_cuda_alone_gives_the_cuda_floor() -> None:
    needs = needs_from_config("img", config_of({"NVIDIA_REQUIRE_CUDA": "cuda>=12.8"}))
    assert (needs.cuda, needs.cuda_source) == ("12.8", "env NVIDIA_REQUIRE_CUDA")


def test_later_env_entries_win_as_in_docker() -> None:
    assert env_from_list(["A=1", "A=2", "B=x=y"], "img") == {"A": "2", "B": "x=y"}


@pytest.mark.parametrize(
    "config",
    [
        {"config": {"Env": "CUDA_VERSION=12.4"}},
        {"config": {"Labels": ["io.gpuship.cuda=12.4"]}},
        {"config": "nope"},
    ],
)
def test_malformed_config_is_an_input_error(config: dict[str, object]) -> None:
    with pytest.raises(InputError, match="img"):
        needs_from_config("img", config)


def test_bad_arch_label_is_an_input_error_naming_the_label() -> None:
    with pytest.raises(InputError, match=r"io\.gpuship\.arch-list"):
        needs_from_config("img", config_of({}, {"io.gpuship.arch-list": "ampere"}))


def test_scan_fills_what_labels_lack_but_never_overrides_a_label() -> None:
    library = ("/lib/libtorch_cuda.so", ("sm_80", "compute_90"))
    scanned = image_needs("img", IMAGES["12.4.1"], {}, ImageScan((TORCH_128,), (library,), True))
    assert (scanned.cuda, scanned.cuda_source) == ("12.8", "image scan (--deep)")
    assert scanned.arch_targets is not None
    assert {str(t) for t in scanned.arch_targets} == {"sm_80", "compute_90"}
    assert scanned.compat_cuda == "12.4"  # the package name still says which compat it is
    labels = {"io.gpuship.cuda": "12.4"}
    kept = image_needs("img", {}, labels, ImageScan((TORCH_128,), (), has_cuda_compat=True))
    assert kept.cuda == "12.4"
    assert kept.arch_targets is None  # no GPU code found: unknown, not "covers nothing"
    assert kept.compat_cuda == "12.4"


def test_effective_cuda_is_the_highest_and_weaker_claims_are_flagged() -> None:
    env = {"CUDA_VERSION": "12.4.1", "NVIDIA_REQUIRE_CUDA": "cuda>=12.4 brand=tesla,driver>=470"}
    labels = {"io.gpuship.cuda": "12.4", "io.gpuship.min-driver": "550.54.14"}
    content = content_cuda([BASE_124, TORCH_128], env, labels)
    assert content.effective == "12.8"
    assert content.deciding == TORCH_128
    assert content.min_driver == str(min_driver_for("12.8"))
    assert sorted(weak.claim.source for weak in content.weak_claims) == [
        "NVIDIA_REQUIRE_CUDA",
        "io.gpuship.cuda",
        "io.gpuship.min-driver",
    ]


def test_claims_matching_the_content_pass() -> None:
    env = {"NVIDIA_REQUIRE_CUDA": "cuda>=12.8"}
    labels = {"io.gpuship.min-driver": str(min_driver_for("12.8"))}
    assert content_cuda([TORCH_128], env, labels).weak_claims == ()


def test_cuda_version_alone_is_the_implied_claim() -> None:
    content = content_cuda([BASE_124, TORCH_128], {"CUDA_VERSION": "12.4.1"}, {})
    assert [weak.claim.source for weak in content.weak_claims] == ["CUDA_VERSION"]


def test_disabled_requirements_are_not_judged() -> None:
    env = {"NVIDIA_REQUIRE_CUDA": "cuda>=12.4", "NVIDIA_DISABLE_REQUIRE": "true"}
    assert content_cuda([TORCH_128], env, {}).weak_claims == ()


def test_unknown_cuda_release_gives_no_driver_and_says_why() -> None:
    content = content_cuda([CudaEvidence("torch", "99.1", "/x")], {}, {})
    assert content.effective == "99.1"
    assert content.min_driver is None
    assert content.unknown


def test_no_cuda_anywhere() -> None:
    content = content_cuda([], {}, {})
    assert (content.effective, content.min_driver) == (None, None)
