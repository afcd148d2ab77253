"""CUDA-bound packages other than torch (issue #37): the CUDA and cuDNN an install needs, from
names that state it and from the knowledge base's release rows; what neither says is None."""

from __future__ import annotations

import pytest

from gpuship.cuda.knowledge import knowledge_base
from gpuship.cuda.packages import KNOWLEDGE_BASE, os_python, package_cuda, torch_built_for
from gpuship.cuda.version import Version


@pytest.mark.parametrize(
    ("name", "version", "extras", "cuda", "cudnn", "bundled", "known_from"),
    [
        ("cupy-cuda12x", None, (), "12", None, False, "its name"),
        ("cupy-cuda13x", "14.0.0", ("ctk",), "13", None, True, "its name"),
        ("cupy-cuda117", None, (), "11.7", None, False, "its name"),
        ("nvidia-cudnn-cu11", "8.9.6.50", (), "11", 8, True, "its name"),
        ("nvidia-cuda-runtime-cu12", None, (), "12", None, True, "its name"),
        ("tensorrt-cu12", "10.3.0", (), "12", None, True, "its name"),
        ("tensorrt-lean-cu11", "10.0.1", (), "11", None, True, "its name"),
        ("jax", "0.4.35", ("cuda12",), "12", None, True, "its extra"),
        ("jax", None, ("cuda12_local",), "12", None, False, "its extra"),
        ("paddlepaddle-gpu", "2.6.1.post120", (), "12.0", None, False, "its version"),
        ("onnxruntime-gpu", "1.17.1", (), "11.8", 8, False, KNOWLEDGE_BASE),
        ("onnxruntime_gpu", "1.20.1", (), "12", 9, False, KNOWLEDGE_BASE),
        ("tensorflow", "2.16.1", ("and-cuda",), "12.3", 8, True, KNOWLEDGE_BASE),
        ("tensorflow", "2.18.0", (), "12.5", 9, False, KNOWLEDGE_BASE),
    ],
)
def test_what_an_install_needs(
    name: str,
    version: str | None,
    extras: tuple[str, ...],
    cuda: str,
    cudnn: int | None,
    bundled: bool,
    known_from: str,
) -> None:
    found = package_cuda(name, version, frozenset(extras))
    assert found is not None
    assert (found.cuda, found.cudnn_major, found.bundled, found.known_from) == (
        Version.parse(cuda),
        cudnn,
        bundled,
        known_from,
    )


@pytest.mark.parametrize(
    ("name", "version", "extras"),
    [
        ("onnxruntime-gpu", "1.23.2", ()),  # a release the knowledge base does not hold
        ("onnxruntime-gpu", None, ()),  # unpinned: whatever is newest at build time
        ("tensorflow", "2.19.0", ("and-cuda",)),
        ("tensorrt", "10.3.0", ()),  # the bare name installs the release's default variant
        ("cupy", "13.3.0", ()),  # built from source against whatever CUDA is there
        ("paddlepaddle-gpu", "2.6.1", ()),
        ("nvidia-cublas", "13.1.0.3", ()),  # CUDA 13's wheels name no CUDA
        ("jax", "0.4.35", ("tpu",)),
    ],
)
def test_what_neither_name_nor_knowledge_base_says_is_unknown(
    name: str, version: str | None, extras: tuple[str, ...]
) -> None:
    assert package_cuda(name, version, frozenset(extras)) is None


def test_the_torch_a_companion_is_built_for() -> None:
    assert torch_built_for("xformers", "0.0.28.post3") == Version.parse("2.5.1")
    assert torch_built_for("xformers", "0.0.28.post1+cu124") == Version.parse("2.4.1")
    assert torch_built_for("xformers", "0.0.26") is None  # its sources disagree: not recorded
    assert torch_built_for("flash-attn", "2.7.4") is None


def test_the_python3_of_an_os() -> None:
    assert os_python("ubuntu", "22.04") == "3.10"
    assert os_python("ubuntu", "24.04") == "3.12"
    assert os_python("ubuntu", "18.04") is None


def test_package_rows_are_sourced_and_not_repeated() -> None:
    kb = knowledge_base()
    seen: set[tuple[str, str]] = set()
    for row in kb.cuda_packages:
        assert row.source.strip()
        for release in row.releases:
            assert (row.package, release) not in seen
            seen.add((row.package, release))
    builds = [(r.package, r.version) for r in kb.torch_builds]
    assert len(set(builds)) == len(builds) and all(r.source for r in kb.torch_builds)
    assert all(r.source for r in kb.os_pythons)
