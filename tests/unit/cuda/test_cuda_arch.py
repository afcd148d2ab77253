"""Arch targets, SASS/PTX coverage and the arch support of CUDA releases."""

from __future__ import annotations

import pytest

from gpuship.cuda.arch import (
    NO_KERNEL_IMAGE,
    ArchTarget,
    ComputeCapability,
    CoverageKind,
    kernel_coverage,
    parse_arch_list,
    sass_runs_on,
)
from gpuship.cuda.errors import InvalidVersion, UnknownVersion
from gpuship.cuda.toolkits import can_compile, compilable_targets


def cc(text: str) -> ComputeCapability:
    return ComputeCapability.parse(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("8.6", (8, 6)), ("sm_86", (8, 6)), ("compute_90", (9, 0)), ("86", (8, 6)),
     ("100", (10, 0)), ("sm_121", (12, 1)), ("12.0", (12, 0))],
)  # fmt: skip
def test_compute_capability_parse(text: str, expected: tuple[int, int]) -> None:
    value = cc(text)
    assert (value.major, value.minor) == expected


@pytest.mark.parametrize("text", ["8", "sm_8", "8.10", "ampere", ""])
def test_compute_capability_invalid(text: str) -> None:
    with pytest.raises(InvalidVersion):
        cc(text)


def test_parse_torch_arch_list() -> None:
    targets = parse_arch_list("7.5;8.0;8.6;9.0;10.0;12.0+PTX")
    assert [str(t) for t in targets] == [
        "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120",
    ]  # fmt: skip


def test_parse_nvcc_and_torch_runtime_names() -> None:
    targets = parse_arch_list(["sm_80", "sm_90a", "compute_90", "sm_100f", "sm_80"])
    assert [str(t) for t in targets] == ["sm_80", "sm_90a", "compute_90", "sm_100f"]
    assert targets[1] == ArchTarget(cc("9.0"), ptx=False, variant="a")


def test_parse_arch_list_garbage() -> None:
    with pytest.raises(InvalidVersion):
        parse_arch_list("8.0;Ampere")


@pytest.mark.parametrize(
    ("code", "gpu", "runs"),
    [
        ("sm_80", "8.0", True),
        ("sm_80", "8.6", True),  # same major, newer minor
        ("sm_80", "8.9", True),
        ("sm_86", "8.0", False),  # older minor
        ("sm_80", "9.0", False),  # other major
        ("sm_80", "8.7", False),  # Jetson Orin excluded
        ("sm_87", "8.7", True),
        ("sm_87", "8.9", False),
        ("sm_90", "9.0", True),
        ("sm_90a", "9.0", True),
        ("sm_100a", "10.3", False),  # arch-specific: exact only
        ("sm_100", "10.3", True),
        ("sm_100", "10.1", False),
        ("sm_101", "11.0", True),  # Thor renamed sm_101 -> sm_110
        ("sm_120", "12.1", True),
        ("sm_121", "12.0", False),
        ("sm_75", "8.0", False),
        ("sm_37", "3.7", True),  # not in the table: general rule
    ],
)
def test_sass_runs_on(code: str, gpu: str, runs: bool) -> None:
    (target,) = parse_arch_list(code)
    assert sass_runs_on(target, cc(gpu)) is runs


@pytest.mark.parametrize(
    ("arch_list", "gpu", "kind", "target"),
    [
        ("7.5;8.0;8.6;9.0;10.0;12.0+PTX", "8.9", CoverageKind.SASS, "sm_86"),
        ("7.5;8.0;8.6;9.0;10.0;12.0+PTX", "12.1", CoverageKind.SASS, "sm_120"),
        ("7.5;8.0;8.6;9.0;10.0;12.0+PTX", "10.3", CoverageKind.SASS, "sm_100"),
        ("5.0;6.0;7.0;7.5;8.0;8.6;9.0", "12.0", CoverageKind.NONE, None),  # cu126 on RTX 5090
        ("sm_80 compute_80", "12.0", CoverageKind.PTX_JIT, "compute_80"),
        ("sm_80 compute_90", "8.9", CoverageKind.SASS, "sm_80"),
        ("compute_90a", "10.0", CoverageKind.NONE, None),
        ("7.0;7.5;8.0;8.6;9.0;10.0;12.0", "6.1", CoverageKind.NONE, None),
    ],
)
def test_kernel_coverage(arch_list: str, gpu: str, kind: CoverageKind, target: str | None) -> None:
    coverage = kernel_coverage(gpu, parse_arch_list(arch_list))
    assert coverage.kind is kind
    assert (str(coverage.target) if coverage.target else None) == target
    if kind is CoverageKind.NONE:
        assert NO_KERNEL_IMAGE in coverage.message


def test_cuda_13_targets_match_nvcc_13() -> None:
    # `nvcc --list-gpu-code` of CUDA 13.0 on the build machine.
    measured = "sm_75 sm_80 sm_86 sm_87 sm_88 sm_89 sm_90 sm_100 sm_103 sm_110 sm_120 sm_121"
    assert {t.sm for t in compilable_targets("13.0")} == set(measured.split())


@pytest.mark.parametrize(
    ("cuda", "target", "expected"),
    [
        ("11.0", "8.6", False),
        ("11.1", "8.6", True),
        ("11.7", "9.0", False),
        ("11.8", "9.0", True),
        ("11.8", "3.5", True),
        ("12.0", "3.7", False),
        ("12.6", "10.0", False),
        ("12.8", "10.0", True),
        ("12.8", "12.0", True),
        ("12.8", "10.3", False),
        ("12.9", "10.3", True),
        ("12.9", "7.0", True),
        ("13.0", "7.0", False),
        ("13.0", "10.1", False),
        ("13.0", "11.0", True),
        ("13.2", "12.1", True),
        ("12.8", "sm_100f", False),  # family targets arrive in 12.9
        ("12.9", "sm_100f", True),
    ],
)
def test_can_compile(cuda: str, target: str, expected: bool) -> None:
    value = parse_arch_list(target)[0] if target.startswith("sm_") else target
    assert can_compile(cuda, value) is expected


@pytest.mark.parametrize(
    ("cuda", "target"),
    [("12.4", "8.7"), ("12.9", "12.1"), ("10.2", "7.5"), ("13.3", "9.0"), ("12.8", "9.9")],
)
def test_can_compile_unknown(cuda: str, target: str) -> None:
    with pytest.raises(UnknownVersion):
        can_compile(cuda, target)
