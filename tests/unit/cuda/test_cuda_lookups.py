"""GPU names, NVML brands and torch wheel variants."""

from __future__ import annotations

import pytest

from gpuship.cuda.errors import InvalidVersion, UnknownVersion
from gpuship.cuda.gpus import brand_from_nvml, find_gpu, gpu_compute_capability
from gpuship.cuda.torch import (
    Availability,
    cuda_of_variant,
    image_libraries,
    known_torch_releases,
    library_wheels,
    torch_release,
    torch_variant,
    variant_name,
)
from gpuship.cuda.version import Version


@pytest.mark.parametrize(
    ("name", "capability", "segment"),
    [
        ("NVIDIA H100 80GB HBM3", "9.0", "datacenter"),
        ("H100", "9.0", "datacenter"),
        ("NVIDIA H200", "9.0", "datacenter"),
        ("NVIDIA GH200 480GB", "9.0", "datacenter"),
        ("Tesla T4", "7.5", "datacenter"),
        ("NVIDIA A100-SXM4-80GB", "8.0", "datacenter"),
        ("NVIDIA A100 80GB PCIe", "8.0", "datacenter"),
        ("NVIDIA A10", "8.6", "datacenter"),
        ("NVIDIA A10G", "8.6", "datacenter"),
        ("NVIDIA L4", "8.9", "datacenter"),
        ("NVIDIA L40S", "8.9", "datacenter"),
        ("NVIDIA GeForce RTX 4090", "8.9", "consumer"),
        ("NVIDIA GeForce RTX 3090", "8.6", "consumer"),
        ("NVIDIA GeForce RTX 5090", "12.0", "consumer"),
        ("NVIDIA RTX A6000", "8.6", "workstation"),
        ("NVIDIA RTX 6000 Ada Generation", "8.9", "workstation"),
        ("NVIDIA B200", "10.0", "datacenter"),
        ("NVIDIA GB300", "10.3", "datacenter"),
        ("Tesla V100-SXM2-16GB", "7.0", "datacenter"),
    ],
)
def test_find_gpu(name: str, capability: str, segment: str) -> None:
    model = find_gpu(name)
    assert model is not None
    assert str(model.compute_capability) == capability
    assert model.segment == segment
    assert model.source


@pytest.mark.parametrize("name", ["NVIDIA A1000", "Radeon", "NVIDIA H20", "GTX 1080"])
def test_unknown_gpu(name: str) -> None:
    assert find_gpu(name) is None
    with pytest.raises(UnknownVersion) as excinfo:
        gpu_compute_capability(name)
    assert excinfo.value.kind == "gpu"


@pytest.mark.parametrize(
    ("value", "brand"),
    [(0, "Unknown"), (2, "Tesla"), (5, "GeForce"), (13, "NvidiaRTX"), (14, "Nvidia"),
     (16, "TitanRTX"), (17, "Unknown"), (19, "Unknown"), (-1, "Unknown")],
)  # fmt: skip
def test_brand_from_nvml(value: int, brand: str) -> None:
    assert brand_from_nvml(value) == brand


def test_torch_release_variants() -> None:
    release = torch_release("2.6.0")
    assert [v.name for v in release.variants] == ["cu118", "cu124", "cu126"]
    assert release.variant("12.6") is not None
    assert release.variant("12.8") is None
    assert torch_release("2.6") == release
    assert torch_release("2.6.0+cu124") == release


def test_torch_variant_arch_list_and_index() -> None:
    variant = torch_variant("2.7.1", "12.8")
    assert variant.arch_list_text == "7.5;8.0;8.6;9.0;10.0;12.0+PTX"
    assert variant.arch_list is not None
    assert "compute_120" in {str(t) for t in variant.arch_list}
    assert variant.index_url == "https://download.pytorch.org/whl/cu128"
    assert variant.cuda_runtime_wheel == "nvidia-cuda-runtime-cu12==12.8.57"


def test_torch_variant_known_absent_in_a_complete_release() -> None:
    with pytest.raises(UnknownVersion) as excinfo:
        torch_variant("2.6.0", "12.1")  # 2.6's CUDA builds were 11.8, 12.4, 12.6 only
    assert excinfo.value.kind == "torch-variant"
    assert "cu124" in str(excinfo.value)
    assert torch_release("2.6").availability("12.1") is Availability.ABSENT


def test_torch_variant_not_listed_in_an_open_release_is_unknown() -> None:
    # 2.12 lists cu126/cu130/cu132; CUDA 12.9 wheels were built off-matrix around then, so a
    # missing row is a gap in gpuship's table, never proof that the wheel does not exist.
    with pytest.raises(UnknownVersion) as excinfo:
        torch_variant("2.12.0", "12.9")
    assert excinfo.value.kind == "torch"
    assert "unknown to gpuship" in str(excinfo.value)
    assert torch_release("2.12").availability("12.9") is Availability.UNKNOWN


def test_torch_210_has_cu129() -> None:
    assert torch_variant("2.10.0", "12.9").name == "cu129"
    assert torch_release("2.10").availability("12.9") is Availability.PUBLISHED


def test_release_with_no_variants_recorded() -> None:
    release = torch_release("2.15.0")
    assert release.variants == () and release.pypi_default is None
    assert release.variant_names() == "none recorded"
    assert release.availability("13.0") is Availability.UNKNOWN


def test_unknown_torch_release() -> None:
    with pytest.raises(UnknownVersion):
        torch_release("1.12.1")


@pytest.mark.parametrize(
    ("torch", "default"),
    [("1.13.1", "cu117"), ("2.0.1", "cu117"), ("2.1.2", "cu121"), ("2.4.1", "cu121"),
     ("2.5.1", "cu124"), ("2.6.0", "cu124"), ("2.7.0", "cu126"), ("2.8.0", "cu128"),
     ("2.9.0", "cu128"), ("2.10.0", "cu128"), ("2.11.0", "cu130"), ("2.14.1", "cu130"),
     ("2.15.0", None)],
)  # fmt: skip
def test_pypi_default(torch: str, default: str | None) -> None:
    release = torch_release(torch)
    assert release.pypi_default == default
    if default:
        assert release.pypi_default_source
        assert release.variant(cuda_of_variant(default)) is not None


def test_library_wheels_and_image_flavours() -> None:
    recorded = library_wheels(12)
    assert recorded is not None and recorded.pinned_by.startswith("torch 2.8.0")
    cu12 = {w.library: w for w in recorded.wheels}
    assert cu12["cudnn"].wheel.startswith("nvidia-cudnn-cu12==")
    assert cu12["cublas"].size_mb > 100
    assert library_wheels(11) is None
    assert "cudnn" not in image_libraries(("runtime",))
    assert {"cublas", "cudnn"} <= image_libraries(("runtime", "cudnn"))


def test_variant_names() -> None:
    assert variant_name("12.4.1") == "cu124"
    assert variant_name(Version.parse("13.0")) == "cu130"
    assert cuda_of_variant("cu118") == Version.parse("11.8")
    assert cuda_of_variant("cu130") == Version.parse("13.0")
    with pytest.raises(InvalidVersion):
        cuda_of_variant("rocm6.2")


def test_torch_releases_sorted() -> None:
    releases = known_torch_releases()
    assert list(releases) == sorted(releases)
    assert releases[0] == Version.parse("1.13")
