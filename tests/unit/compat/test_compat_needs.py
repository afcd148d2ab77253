"""Image needs from an image config: labels first, then stock nvidia/cuda variables."""

from __future__ import annotations

import pytest
from require_values import IMAGES

from gpuship.compat.needs import env_from_list, needs_from_config, with_scan
from gpuship.errors import InputError


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
    stock = needs_from_config("img", config_of(IMAGES["12.4.1"]))
    scanned = with_scan(
        stock,
        effective_cuda="12.8",
        libraries=[("/lib/libtorch_cuda.so", ("sm_80", "compute_90"))],
        has_cuda_compat=True,
    )
    assert (scanned.cuda, scanned.cuda_source) == ("12.8", "image scan (--deep)")
    assert scanned.arch_targets is not None
    assert {str(t) for t in scanned.arch_targets} == {"sm_80", "compute_90"}
    assert scanned.compat_cuda == "12.4"  # the package name still says which compat it is
    labelled = needs_from_config("img", config_of({}, {"io.gpuship.cuda": "12.4"}))
    kept = with_scan(labelled, effective_cuda="12.8", libraries=[], has_cuda_compat=True)
    assert kept.cuda == "12.4"
    assert kept.arch_targets is None  # no GPU code found: unknown, not "covers nothing"
    assert kept.compat_cuda == "12.4"
