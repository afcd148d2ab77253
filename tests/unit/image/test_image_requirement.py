"""Effective CUDA against the image's claims; architecture coverage per GPU library."""

from __future__ import annotations

from gpuship.cuda.arch import parse_arch_list
from gpuship.cuda.drivers import min_driver_for
from gpuship.image.analysis import ScannedLibrary
from gpuship.image.requirement import cuda_requirement, sm_targets, target_coverage
from gpuship.image_result import CudaEvidence

TORCH_128 = CudaEvidence("torch", "12.8", "/site-packages/torch/version.py")
BASE_124 = CudaEvidence("CUDA_VERSION", "12.4", "env CUDA_VERSION")


def test_effective_cuda_is_the_highest_and_weaker_claims_are_flagged() -> None:
    env = {"CUDA_VERSION": "12.4.1", "NVIDIA_REQUIRE_CUDA": "cuda>=12.4 brand=tesla,driver>=470"}
    labels = {"io.gpuship.cuda": "12.4", "io.gpuship.min-driver": "550.54.14"}
    requirement = cuda_requirement([BASE_124, TORCH_128], env, labels)
    assert requirement.effective == "12.8"
    assert requirement.deciding == TORCH_128
    assert requirement.min_driver == str(min_driver_for("12.8"))
    assert sorted(weak.claim.source for weak in requirement.weak_claims) == [
        "NVIDIA_REQUIRE_CUDA",
        "io.gpuship.cuda",
        "io.gpuship.min-driver",
    ]


def test_claims_matching_the_content_pass() -> None:
    env = {"NVIDIA_REQUIRE_CUDA": "cuda>=12.8"}
    labels = {"io.gpuship.min-driver": str(min_driver_for("12.8"))}
    assert cuda_requirement([TORCH_128], env, labels).weak_claims == ()


def test_cuda_version_alone_is_the_implied_claim() -> None:
    requirement = cuda_requirement([BASE_124, TORCH_128], {"CUDA_VERSION": "12.4.1"}, {})
    assert [weak.claim.source for weak in requirement.weak_claims] == ["CUDA_VERSION"]


def test_disabled_requirements_are_not_judged() -> None:
    env = {"NVIDIA_REQUIRE_CUDA": "cuda>=12.4", "NVIDIA_DISABLE_REQUIRE": "true"}
    assert cuda_requirement([TORCH_128], env, {}).weak_claims == ()


def test_unknown_cuda_release_gives_no_driver_and_says_why() -> None:
    requirement = cuda_requirement([CudaEvidence("torch", "99.1", "/x")], {}, {})
    assert requirement.effective == "99.1"
    assert requirement.min_driver is None
    assert requirement.unknown


def test_no_cuda_anywhere() -> None:
    requirement = cuda_requirement([], {}, {})
    assert (requirement.effective, requirement.min_driver) == (None, None)


def _lib(path: str, sass: tuple[str, ...], ptx: tuple[str, ...] = ()) -> ScannedLibrary:
    return ScannedLibrary(path, 1, 0, sass, ptx)


def test_target_coverage_per_library() -> None:
    libraries = [
        _lib("a.so", ("sm_80", "sm_90")),
        _lib("b.so", ("sm_80",), ("compute_80",)),
        _lib("c.so", ("sm_75",)),
    ]
    coverage = target_coverage("sm_90", libraries)
    assert coverage.missing == ("/c.so",)  # sm_75 SASS does not run on 9.0, no PTX
    assert coverage.ptx_only == ("/b.so",)  # compute_80 PTX JIT-compiles for 9.0
    assert target_coverage("sm_86", libraries).missing == ("/c.so",)


def test_sm_targets_of_an_arch_list() -> None:
    assert sm_targets(parse_arch_list("9.0+PTX;8.0")) == ("sm_80", "sm_90")
    assert sm_targets(()) == ()


def test_arch_specific_code_runs_only_on_its_own_architecture() -> None:
    library = _lib("v.so", ("sm_90a", "sm_120f"), ("compute_90a",))
    assert target_coverage("sm_90", [library]).missing == ()
    assert target_coverage("sm_121", [library]).missing == ()  # family target: 12.x
    # Neither sm_90a SASS nor compute_90a PTX carries forward to Blackwell.
    assert target_coverage("sm_100", [library]).missing == ("/v.so",)
