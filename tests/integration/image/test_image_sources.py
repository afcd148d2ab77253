"""One image read through every source gives the same report, and every figure is right.

The image is assembled by the test bed (bed.oci), pushed to the real registry, written as an OCI
layout and a `docker save` archive, and loaded into the real engine. Expected figures are
computed here from the layer contents, independently of gpuship.
"""

from __future__ import annotations

import random
import struct
from pathlib import Path
from typing import Any

import pytest

from bed.docker_engine import DockerEngine
from bed.oci import make_image, push, write_docker_archive, write_oci_layout
from bed.registry import Registry
from gpuship.cuda.drivers import min_driver_for
from gpuship.image import rules
from gpuship.image.config import ImageStageConfig
from gpuship.image.inspect import inspect_image
from gpuship.image.report import Judgement, judge
from gpuship.registry.access import RegistryAccess
from gpuship.report.result import to_json

pytestmark = pytest.mark.integration

MIB = 1 << 20
SITE = "usr/local/lib/python3.11/site-packages"
CONFIG = ImageStageConfig(targets=["sm_80", "sm_100"])


def _noise(seed: int, size: int) -> bytes:
    return random.Random(seed).randbytes(size)


def _safetensors(size: int) -> bytes:
    header = b'{"w":{"dtype":"U8","shape":[%d],"data_offsets":[0,%d]}}' % (size, size)
    return struct.pack("<Q", len(header)) + header + _noise(7, size)


@pytest.fixture(scope="module")
def layers(nvcc_library: Path) -> list[dict[str, bytes]]:
    return [
        {
            "usr/local/cuda/lib64/libcudart.so.12.4.127": _noise(1, MIB),
            "usr/local/cuda/lib64/libcublas.so.12": _noise(2, 2 * MIB),
            "usr/local/cuda/bin/nvcc": _noise(3, 300_000),
            "var/lib/apt/lists/jammy_Packages": _noise(4, 3 * MIB),
            "tmp/build/scratch.bin": _noise(5, 12 * MIB),
            "etc/app.conf": b"a" * 1000,
        },
        {
            f"{SITE}/torch/version.py": b"__version__ = '2.7.0'\ncuda: Optional[str] = '12.8'\n",
            f"{SITE}/nvidia_cuda_runtime_cu12-12.8.57.dist-info/METADATA": b"Name: x\n",
            f"{SITE}/nvidia/cublas/lib/libcublas.so.12": _noise(6, 2 * MIB),
            "root/.cache/pip/http-v2/a/b/c": _noise(8, MIB),
            "models/model.safetensors": _safetensors(3 * MIB),
            "usr/lib/libscale.so": nvcc_library.read_bytes(),
            "tmp/build/.wh.scratch.bin": b"",
        },
        {"etc/app.conf": b"b" * 2000},
    ]


@pytest.fixture(scope="module")
def image(layers: list[dict[str, bytes]]) -> Any:
    return make_image(
        layers,
        env={"CUDA_VERSION": "12.4.1", "NVIDIA_REQUIRE_CUDA": "cuda>=12.4"},
        labels={"org.opencontainers.image.source": "https://github.com/o/r"},
    )


def _judge(reference: str, **kwargs: Any) -> Judgement:
    analysis = inspect_image(reference, platform="linux/amd64", **kwargs)
    return judge(analysis, CONFIG)


_SOURCE_SPECIFIC = ("reference", "source", "manifest_digest")
_LAYER_SPECIFIC = ("digest", "compression", "compressed_size")


def _comparable(judgement: Judgement) -> dict[str, Any]:
    """The result minus what legitimately differs per source (compressed blobs, references)."""
    result = to_json(judgement.result)
    for key in _SOURCE_SPECIFIC:
        result["image"].pop(key)
    result["size"].pop("compressed")
    for layer in result["layers"]:
        for key in _LAYER_SPECIFIC:
            layer.pop(key)
    findings = sorted((f.rule, f.severity.value, f.message) for f in judgement.findings)
    return {"result": result, "findings": findings}


def _check_figures(judgement: Judgement, layers: list[dict[str, bytes]]) -> None:
    result = to_json(judgement.result)
    sizes = [sum(len(data) for data in layer.values()) for layer in layers]
    assert [layer["uncompressed_size"] for layer in result["layers"]] == sizes
    assert result["size"]["uncompressed"] == sum(sizes)
    scratch, conf_old, conf_new = 12 * MIB, 1000, 2000
    total = sum(sizes)
    dive = result["dive"]
    # Two paths seen twice: scratch.bin (12 MiB, then a whiteout sized 0) and app.conf.
    assert dive["efficiency"] == pytest.approx((total - scratch - conf_new) / total)
    assert dive["wasted_bytes"] == scratch + conf_old + conf_new
    assert dive["user_size_bytes"] == sizes[1] + sizes[2]
    assert dive["user_wasted_percent"] == pytest.approx(
        dive["wasted_bytes"] / (sizes[1] + sizes[2])
    )
    assert result["waste"]["corrected_wasted_bytes"] == scratch + conf_old
    weights = layers[1]["models/model.safetensors"]
    assert result["weights"] == [
        {
            "path": "/models/model.safetensors",
            "format": "safetensors",
            "size": len(weights),
            "layer": 1,
        }
    ]
    caches = {c["kind"]: (c["size"], c["layers"]) for c in result["package_caches"]}
    assert caches == {"apt-lists": (3 * MIB, [0]), "pip": (MIB, [1])}
    assert [(t["kind"], t["size"]) for t in result["toolchains"]] == [("nvcc", 300_000)]
    duplicate = result["duplicate_cuda_libraries"]
    assert [(d["library"], d["system_size"], d["wheel_size"]) for d in duplicate] == [
        ("libcublas", 2 * MIB, 2 * MIB)
    ]
    cuda = result["cuda"]
    assert cuda["effective"] == "12.8"
    assert cuda["min_driver"] == str(min_driver_for("12.8"))
    assert sorted((e["source"], e["version"]) for e in cuda["evidence"]) == [
        ("CUDA_VERSION", "12.4"),
        ("libcudart", "12.4"),
        ("nvidia-cuda-runtime wheel", "12.8"),
        ("torch", "12.8"),
    ]
    gpu = result["gpu"]
    assert gpu["libraries"][0]["path"] == "/usr/lib/libscale.so"
    assert (gpu["sass"], gpu["ptx"]) == (["sm_75", "sm_80", "sm_90"], ["compute_90"])
    targets = {t["target"]: (t["missing"], t["ptx_only"]) for t in gpu["targets"]}
    assert targets == {"sm_80": ([], []), "sm_100": ([], ["/usr/lib/libscale.so"])}
    fired = {f.rule for f in judgement.findings}
    assert {
        rules.LABEL_MISSING,
        rules.WEIGHTS,
        rules.PACKAGE_CACHE,
        rules.TOOLCHAIN,
        rules.CUDA_CLAIM_WEAKER,
        rules.CUDA_DUPLICATED,
        rules.ARCH_MISSING,
        rules.HIDDEN_FILES,
        rules.INEFFICIENT,  # user-wasted 12 MiB of ~6 MiB user layers > 0.1
    } == fired


def test_same_report_from_registry_oci_layout_and_docker_archive(
    image: Any, layers: list[dict[str, bytes]], registry: Registry, tmp_path: Path
) -> None:
    push(registry.url, "image/sources", image, tag="v1")
    layout = write_oci_layout(tmp_path / "layout", image, tag="v1")
    archive = write_docker_archive(tmp_path / "image.tar", image)
    from_registry = _judge(registry.ref("image/sources", "v1"))
    from_prefixed = _judge("registry://" + registry.ref("image/sources", "v1"))
    from_layout = _judge(f"oci:{layout}:v1")
    from_archive = _judge(f"docker-archive:{archive}")
    _check_figures(from_registry, layers)
    compressed = [len(blob.data) for blob in image.layers]
    assert [
        layer["compressed_size"] for layer in to_json(from_registry.result)["layers"]
    ] == compressed
    assert [
        layer["compressed_size"] for layer in to_json(from_layout.result)["layers"]
    ] == compressed
    assert to_json(from_registry.result)["image"]["manifest_digest"] == image.digest
    expected = _comparable(from_registry)
    for other in (from_prefixed, from_layout, from_archive):
        assert _comparable(other) == expected


def test_engine_export_matches_the_archive(
    image: Any, layers: list[dict[str, bytes]], docker_engine: DockerEngine, tmp_path: Path
) -> None:
    archive = write_docker_archive(tmp_path / "load.tar", image, repo_tags=["gpuship/inspect:load"])
    docker_engine.client.images.load(archive.read_bytes())
    environ = docker_engine.env
    from_engine = _judge("docker://gpuship/inspect:load", access=RegistryAccess(environ=environ))
    _check_figures(from_engine, layers)
    saved = tmp_path / "saved.tar"
    with saved.open("wb") as handle:
        for chunk in docker_engine.client.images.get("gpuship/inspect:load").save():
            handle.write(chunk)
    assert _comparable(_judge(f"docker-archive:{saved}")) == _comparable(from_engine)
    assert _comparable(from_engine) == _comparable(_judge(f"docker-archive:{archive}"))


def test_image_built_by_the_engine(
    nvcc_library: Path, docker_engine: DockerEngine, tmp_path: Path
) -> None:
    from bed.images import build_scratch_image, dockerfile_for_layers

    built_layers = [
        {"usr/lib/libscale.so": nvcc_library.read_bytes(), "root/.cache/pip/x": _noise(9, 5000)},
        {"srv/weights/model.gguf": b"GGUF" + _noise(10, 2 * MIB)},
    ]
    env = {"NVIDIA_REQUIRE_CUDA": "cuda>=12.0"}
    build_scratch_image(docker_engine, "gpuship/inspect:built", built_layers, env=env)
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text(dockerfile_for_layers(len(built_layers), env))
    from gpuship.image.run import dockerfile_lines

    analysis = inspect_image(
        "docker://gpuship/inspect:built",
        platform="linux/amd64",
        access=RegistryAccess(environ=docker_engine.env),
    )
    judgement = judge(analysis, CONFIG, dockerfile_lines(dockerfile, analysis))
    result = to_json(judgement.result)
    assert [layer["uncompressed_size"] for layer in result["layers"]] == [
        sum(len(data) for data in layer.values()) for layer in built_layers
    ]
    assert [layer["dockerfile_line"] for layer in result["layers"]] == [2, 3]
    assert result["weights"][0]["path"] == "/srv/weights/model.gguf"
    assert result["gpu"]["sass"] == ["sm_75", "sm_80", "sm_90"]
    assert result["env"]["NVIDIA_REQUIRE_CUDA"] == "cuda>=12.0"
    weights = next(f for f in judgement.findings if f.rule == rules.WEIGHTS)
    assert weights.location is not None
    assert (weights.location.file, weights.location.line) == (str(dockerfile), 3)


def test_zstd_layers_read_like_gzip(registry: Registry) -> None:
    import dataclasses
    import json

    import zstandard

    from bed.oci import Blob

    files = {"opt/app/data.bin": _noise(11, 3 * MIB), "opt/app/model.gguf": b"GGUF" + bytes(10)}
    gzip_image = make_image([files])
    layer = Blob(
        "application/vnd.oci.image.layer.v1.tar+zstd",
        zstandard.ZstdCompressor().compress(gzip_image.layer_tars[0]),
    )
    manifest = json.loads(gzip_image.manifest.data)
    manifest["layers"] = [layer.descriptor()]
    zstd_image = dataclasses.replace(
        gzip_image,
        manifest=Blob(gzip_image.manifest.media_type, json.dumps(manifest).encode()),
        layers=(layer,),
    )
    push(registry.url, "image/zstd", zstd_image, tag="v1")
    push(registry.url, "image/gzip", gzip_image, tag="v1")
    from_zstd = _judge(registry.ref("image/zstd", "v1"))
    from_gzip = _judge(registry.ref("image/gzip", "v1"))
    assert to_json(from_zstd.result)["layers"][0]["compression"] == "zstd"
    assert to_json(from_zstd.result)["layers"][0]["compressed_size"] == len(layer.data)
    assert _comparable(from_zstd) == _comparable(from_gzip)
