"""GSI506 on images in the real registry (issue #33): the files an apt install of
libnvidia-compute-550 leaves are an error at their layer; an image with only the toolkit's
link-time stubs, the cuda-compat libraries and the empty leftovers of a build under the NVIDIA
runtime is silent."""

from __future__ import annotations

import pytest

from bed.images import FileSpec
from bed.oci import make_image, push
from bed.registry import Registry
from gpuship.image import rules
from gpuship.image.config import ImageStageConfig
from gpuship.image.run import inspect_and_judge
from gpuship.registry.access import RegistryAccess

pytestmark = pytest.mark.integration

LIB = "usr/lib/x86_64-linux-gnu"
CUDA = "usr/local/cuda-12.4"
DRIVER = "550.54.15"
# An ELF shared object's first bytes, then padding: the layer scan reads names and sizes.
ELF = b"\x7fELF\x02\x01\x01" + bytes(64 << 10)


def _link(target: str) -> FileSpec:
    return FileSpec(kind="symlink", target=target)


def _library(name: str) -> dict[str, bytes | FileSpec]:
    """A driver library as libnvidia-compute-550 installs it: the file named with the driver
    version, its soname and development name as symbolic links."""
    return {
        f"{LIB}/{name}.so.{DRIVER}": ELF,
        f"{LIB}/{name}.so.1": _link(f"{name}.so.{DRIVER}"),
        f"{LIB}/{name}.so": _link(f"{name}.so.1"),
    }


def _runtime_base() -> dict[str, bytes | FileSpec]:
    """What an nvidia/cuda:12.4.1-runtime image holds of libcuda's kind: the CUDA runtime, the
    cuda-compat-12-4 libraries, and (devel) the link-time stubs."""
    return {
        f"{CUDA}/targets/x86_64-linux/lib/libcudart.so.12.4.127": ELF,
        f"{CUDA}/targets/x86_64-linux/lib/stubs/libcuda.so": ELF,
        f"{CUDA}/targets/x86_64-linux/lib/stubs/libnvidia-ml.so": ELF,
        f"{CUDA}/compat/libcuda.so.{DRIVER}": ELF,
        f"{CUDA}/compat/libcuda.so.1": _link(f"libcuda.so.{DRIVER}"),
        f"{CUDA}/compat/libnvidia-ptxjitcompiler.so.{DRIVER}": ELF,
        f"{CUDA}/compat/libnvidia-nvvm.so.{DRIVER}": ELF,
        f"{CUDA}/compat/libcudadebugger.so.{DRIVER}": ELF,
    }


@pytest.fixture(scope="module")
def pushed(registry: Registry) -> dict[str, str]:
    driver = make_image(
        [
            _runtime_base(),
            {
                **_library("libcuda"),
                **_library("libnvidia-ml"),
                **_library("libnvidia-ptxjitcompiler"),
                f"{LIB}/libnvidia-opencl.so.{DRIVER}": ELF,
                "var/lib/dpkg/info/libnvidia-compute-550:amd64.list": f"/{LIB}\n".encode(),
            },
        ],
        env={"CUDA_VERSION": "12.4.1"},
        history=[
            {"created_by": "ADD rootfs.tar.gz / # buildkit"},
            {"created_by": "RUN apt-get install -y libnvidia-compute-550 # buildkit"},
        ],
    )
    clean = make_image(
        [
            _runtime_base(),
            # A build under the NVIDIA runtime leaves the host's mount points empty
            # (NVIDIA/libnvidia-container#140): no library in them.
            {
                f"{LIB}/libcuda.so.535.161.08": b"",
                f"{LIB}/libcuda.so.1": _link("libcuda.so.535.161.08"),
                f"{LIB}/libnvidia-ml.so.535.161.08": b"",
            },
        ],
        env={"CUDA_VERSION": "12.4.1"},
    )
    push(registry.url, "image/driver-libs", driver, tag="baked")
    push(registry.url, "image/driver-libs", clean, tag="clean")
    return {
        "baked": registry.ref("image/driver-libs", "baked"),
        "clean": registry.ref("image/driver-libs", "clean"),
    }


def test_baked_driver_libraries_are_one_error_at_their_layer(pushed: dict[str, str]) -> None:
    judgement = inspect_and_judge(pushed["baked"], ImageStageConfig(), access=RegistryAccess())
    found = [f for f in judgement.findings if f.rule == rules.DRIVER_LIBRARIES]
    assert [f.severity.value for f in found] == ["error"]
    assert found[0].message.startswith(
        f"NVIDIA driver {DRIVER} user-space libraries in layer 1: /{LIB}/libcuda.so.{DRIVER}, "
        f"/{LIB}/libnvidia-ml.so.{DRIVER}, /{LIB}/libnvidia-opencl.so.{DRIVER} and 1 more."
    )
    assert rules.DRIVER_LIBRARIES in judgement.rules


def test_stubs_compat_and_empty_leftovers_are_silent(pushed: dict[str, str]) -> None:
    judgement = inspect_and_judge(pushed["clean"], ImageStageConfig(), access=RegistryAccess())
    assert rules.DRIVER_LIBRARIES not in {f.rule for f in judgement.findings}
    assert judgement.result.cuda.has_cuda_compat
