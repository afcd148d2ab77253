"""`gpuship inspect --compare` on the real registry: two images built by the real Docker engine
from known layers, pushed to the real `docker-registry`, give exactly their differences.

The reference and the candidate share their base layer (the engine builds it once and pushes
one blob); the candidate changes one layer's files, its pip and dpkg packages, and adds a
layer. Expected differences are stated here from the layer contents.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from bed.docker_engine import DockerEngine
from bed.images import build_scratch_image
from bed.registry import Registry
from gpuship.cli.main import main

pytestmark = pytest.mark.integration

SITE = "usr/local/lib/python3.11/site-packages"
STATUS = "var/lib/dpkg/status"


def _noise(seed: int, size: int) -> bytes:
    return random.Random(seed).randbytes(size)


def _status(*packages: tuple[str, str]) -> bytes:
    return "\n".join(
        f"Package: {name}\nStatus: install ok installed\nVersion: {version}\n"
        for name, version in packages
    ).encode()


BASE = {"usr/lib/x86_64-linux-gnu/libbase.so.1": _noise(1, 200_000), "etc/os-release": b"ID=t\n"}
REFERENCE_APP = {
    STATUS: _status(("libc6", "2.35-0ubuntu3.8"), ("curl", "7.81.0-1ubuntu1.20")),
    f"{SITE}/numpy-1.26.4.dist-info/METADATA": b"Name: numpy\n",
    "app/model.py": _noise(2, 50_000),
}
CANDIDATE_APP = {
    STATUS: _status(("libc6", "2.35-0ubuntu3.9"), ("git", "1:2.34.1-1ubuntu1.11")),
    f"{SITE}/numpy-2.1.0.dist-info/METADATA": b"Name: numpy\n",
    f"{SITE}/safetensors-0.4.5.dist-info/METADATA": b"Name: safetensors\n",
    "app/model.py": _noise(3, 80_000),
    "app/extra.py": _noise(4, 30_000),
}
CUDA_LAYER = {"usr/local/cuda/lib64/libcublas.so.12.6.4.1": _noise(5, 100_000)}


@pytest.fixture(scope="module")
def pushed(docker_engine: DockerEngine, registry: Registry) -> tuple[str, str]:
    refs = []
    for tag, layers in (
        ("stable", [BASE, REFERENCE_APP]),
        ("pr-1", [BASE, CANDIDATE_APP, CUDA_LAYER]),
    ):
        name = f"{registry.host}/compare/app"
        build_scratch_image(docker_engine, f"{name}:{tag}", layers)
        docker_engine.client.images.push(name, tag=tag)
        refs.append(registry.ref("compare/app", tag))
    return refs[1], refs[0]


def _compare(pushed: tuple[str, str], tmp_path: Path, *flags: str) -> tuple[int, dict[str, Any]]:
    out = tmp_path / "compare.json"
    code = main(
        [
            "inspect",
            pushed[0],
            "--compare",
            pushed[1],
            "--format",
            "json",
            "--output",
            str(out),
            *flags,
        ]
    )
    return code, json.loads(out.read_text())


def test_exactly_the_known_differences(pushed: tuple[str, str], tmp_path: Path) -> None:
    code, document = _compare(pushed, tmp_path)
    result = document["result"]
    assert result["shared_layers"] == 1
    assert result["candidate"]["layers"] == 3 and result["reference"]["layers"] == 2
    size = sum(len(v) for v in CANDIDATE_APP.values()) + sum(len(v) for v in CUDA_LAYER.values())
    assert result["size"]["uncompressed_delta"] == size - sum(
        len(v) for v in REFERENCE_APP.values()
    )
    layers = [
        (row["change"], row["candidate_index"], row["reference_index"]) for row in result["layers"]
    ]
    assert layers == [("grown", 1, 1), ("added", 2, None)]
    files = {(row["path"], row["change"]) for row in result["files"]}
    assert files == {
        ("/app/model.py", "grown"),
        ("/app/extra.py", "added"),
        ("/usr/local/cuda/lib64/libcublas.so.12.6.4.1", "added"),
        (f"/{SITE}/numpy-2.1.0.dist-info/METADATA", "added"),
        (f"/{SITE}/safetensors-0.4.5.dist-info/METADATA", "added"),
        (f"/{STATUS}", "grown"),
    }
    packages = {
        (
            row["manager"],
            row["name"],
            row["change"],
            row["reference_version"],
            row["candidate_version"],
        )
        for row in result["packages"]
    }
    assert packages == {
        ("dpkg", "libc6", "changed", "2.35-0ubuntu3.8", "2.35-0ubuntu3.9"),
        ("dpkg", "curl", "removed", "7.81.0-1ubuntu1.20", None),
        ("dpkg", "git", "added", None, "1:2.34.1-1ubuntu1.11"),
        ("pip", "numpy", "changed", "1.26.4", "2.1.0"),
        ("pip", "safetensors", "added", None, "0.4.5"),
    }
    assert [
        (row["library"], row["change"], row["candidate_versions"])
        for row in result["cuda_libraries"]
    ] == [("libcublas", "added", ["12.6.4.1"])]
    assert result["growth"] is None
    assert (code == 0) == (not document["failed"])


def test_growth_budget_fails_the_run(pushed: tuple[str, str], tmp_path: Path) -> None:
    code, document = _compare(pushed, tmp_path, "--growth-max-mib", "0.1")
    assert code == 1 and document["failed"]
    assert "GSI803" in {finding["rule"] for finding in document["findings"]}
    code, document = _compare(pushed, tmp_path, "--growth-max-mib", "1")
    assert "GSI803" not in {finding["rule"] for finding in document["findings"]}


def test_image_map_sizes_from_the_registry(
    pushed: tuple[str, str], docker_engine: DockerEngine, registry: Registry, tmp_path: Path
) -> None:
    repository = f"{registry.host}/compare/app"
    docker_engine.client.images.get(pushed[0]).tag(repository, "cu124")
    docker_engine.client.images.push(repository, tag="cu124")
    (tmp_path / "gpuship.yaml").write_text(
        f"images:\n  - name: app\n    repository: {repository}\n"
        '    axes:\n      cuda: ["12.4", "12.6"]\n    tags: ["cu{cuda|nodot}"]\n'
    )
    out = tmp_path / "map.json"
    code = main(
        [
            "--config",
            str(tmp_path / "gpuship.yaml"),
            "docs",
            "--image-map",
            "--sizes",
            "--format",
            "json",
            "--output",
            str(out),
        ]
    )
    text = json.loads(out.read_text())["result"]["image_map"]
    assert code == 0
    _, document = _compare(pushed, tmp_path)
    size = document["result"]["candidate"]["compressed"]
    from gpuship.units import human_size

    assert f"`{repository}:cu124` | {human_size(size)} |" in text
    assert f"`{repository}:cu126` | not pushed |" in text
