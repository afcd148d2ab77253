"""Recognising weights, caches, toolchains, CUDA libraries and CUDA versions from paths/bytes."""

from __future__ import annotations

import struct

import pytest

from gpuship.image import paths
from gpuship.image.weights import hub_cache_of, sniff_weights


def _safetensors() -> bytes:
    header = b'{"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'
    return struct.pack("<Q", len(header)) + header + bytes(8)


def _torch_zip() -> bytes:
    name = b"archive/data.pkl"
    return b"PK\x03\x04" + bytes(22) + struct.pack("<HH", len(name), 0) + name


@pytest.mark.parametrize(
    ("path", "head", "expected"),
    [
        ("m/model.bin", _safetensors(), "safetensors"),  # content beats the extension
        ("m/x.gguf", b"GGUF\x03\x00\x00\x00", "gguf"),
        ("m/pytorch_model.bin", _torch_zip(), "torch"),
        ("m/old.pt", b"\x80\x02}q\x00", "torch"),
        ("m/model.onnx", b"\x08\x07\x12", "onnx"),
        ("saved/variables/variables.data-00000-of-00001", b"\x00\x01", "tensorflow"),
        ("m/data.bin", b"\x00\x01\x02random", None),  # .bin without weights content
        ("app/main.py", b"print('hi')", None),
    ],
)
def test_weights_by_content_then_extension(path: str, head: bytes, expected: str | None) -> None:
    assert sniff_weights(path, head, size=10_000) == expected


def test_safetensors_header_longer_than_the_file_is_not_weights() -> None:
    assert sniff_weights("x.bin", struct.pack("<Q", 10**9) + b"{", size=100) is None


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("root/.cache/huggingface/hub/models--bert/blobs/abc", "huggingface"),
        ("root/.cache/torch/hub/checkpoints/resnet.pth", "torch-hub"),
        ("app/model.pth", None),
    ],
)
def test_hub_caches(path: str, expected: str | None) -> None:
    assert hub_cache_of(path) == expected


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("root/.cache/pip/http-v2/a/b", "pip"),
        ("home/app/.cache/uv/wheels/x.whl", "uv"),
        ("opt/conda/pkgs/numpy-1.26.tar.bz2", "conda"),
        ("var/lib/apt/lists/archive.ubuntu.com_dists_jammy_InRelease", "apt-lists"),
        ("var/lib/apt/lists/lock", None),
        ("var/cache/apt/archives/gcc_12.deb", "apt-archives"),
        ("root/.npm/_cacache/index-v5/aa", "npm"),
        ("usr/lib/python3/site-packages/pip/__init__.py", None),
    ],
)
def test_package_caches(path: str, expected: str | None) -> None:
    assert paths.package_cache_of(path) == expected


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("usr/local/cuda-12.4/bin/nvcc", "nvcc"),
        ("usr/local/cuda/lib64/libcublas_static.a", "cuda-static-lib"),
        ("usr/local/cuda/targets/x86_64-linux/include/cuda.h", "cuda-headers"),
        ("usr/lib/gcc/x86_64-linux-gnu/12/cc1plus", "gcc"),
        ("usr/bin/x86_64-linux-gnu-gcc-12", "gcc"),
        ("usr/local/cuda/lib64/libcudart.so.12", None),
    ],
)
def test_toolchains(path: str, expected: str | None) -> None:
    assert paths.toolchain_of(path) == expected


def test_cuda_libraries_system_and_wheel() -> None:
    assert paths.cuda_library("usr/local/cuda/lib64/libcublas.so.12.4.5.8") == (
        "libcublas",
        "system",
    )
    assert paths.cuda_library(
        "usr/local/lib/python3.11/site-packages/nvidia/cublas/lib/libcublas.so.12"
    ) == ("libcublas", "wheel")
    assert paths.cuda_library("usr/lib/libfoo.so") is None


def test_cuda_version_sources() -> None:
    assert paths.torch_cuda_from_version_py("cuda: Optional[str] = '12.4'\n") == "12.4"
    assert paths.torch_cuda_from_version_py("cuda = '12.8'\nhip = None\n") == "12.8"
    assert paths.torch_cuda_from_version_py("cuda: Optional[str] = None\n") is None
    assert (
        paths.cuda_runtime_wheel_version(
            "usr/lib/python3/site-packages/nvidia_cuda_runtime_cu12-12.8.57.dist-info/METADATA"
        )
        == "12.8"
    )
    assert (
        paths.cuda_runtime_wheel_version(
            "x/site-packages/nvidia_cuda_runtime-13.0.96.dist-info/RECORD"
        )
        == "13.0"
    )
    assert paths.cudart_soname_version("usr/local/cuda/lib64/libcudart.so.12.4.127") == "12.4"
    assert paths.cudart_soname_version("usr/local/cuda/lib64/libcudart.so.12") is None
    # CUDA 11's soname is .so.11.0 for every 11.x: only the real file name is evidence.
    assert paths.cudart_soname_version("usr/local/cuda/lib64/libcudart.so.11.0") is None
    assert paths.cudart_soname_version("usr/local/cuda/lib64/libcudart.so.11.8.89") == "11.8"


def test_debian_dist_packages_count_like_site_packages() -> None:
    assert paths.TORCH_VERSION_FILE.search(
        "usr/local/lib/python3.10/dist-packages/torch/version.py"
    )
    assert paths.cuda_library("usr/lib/python3/dist-packages/nvidia/cudnn/lib/libcudnn.so.9") == (
        "libcudnn",
        "wheel",
    )
