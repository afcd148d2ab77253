"""What the image stage reads for an image's needs, and the lint hook, against the real
registry."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from bed.oci import make_image, push, write_docker_archive
from bed.registry import Registry
from gpuship.compat.needs import image_needs
from gpuship.cuda.drivers import min_driver_for
from gpuship.errors import InputError
from gpuship.image import rules
from gpuship.image.config import ImageStageConfig
from gpuship.image.needs import read_image
from gpuship.image.run import inspect_and_judge
from gpuship.registry.access import RegistryAccess
from gpuship.report.result import to_json

pytestmark = pytest.mark.integration

SITE = "usr/lib/python3/site-packages"


@pytest.fixture(scope="module")
def gpu_image(nvcc_library: Path) -> object:
    return make_image(
        [
            {"usr/local/cuda-12.4/compat/libcuda.so.550.54.15": b"compat"},
            {
                f"{SITE}/torch/version.py": b"cuda = '12.6'\n",
                f"{SITE}/torch/lib/libtorch_cuda.so": nvcc_library.read_bytes(),
                "srv/model.safetensors": b"\x08" + bytes(7) + b"{}" + bytes(2 << 20),
            },
        ],
        env={"CUDA_VERSION": "12.4.1"},
        labels={"io.gpuship.cuda": "12.4"},
    )


def test_deep_needs_read_from_the_registry(gpu_image: object, registry: Registry) -> None:
    push(registry.url, "image/needs", gpu_image, tag="v1")  # type: ignore[arg-type]
    reading = read_image(registry.ref("image/needs", "v1"))
    assert reading.scan is not None
    assert reading.manifest_digest == gpu_image.digest  # type: ignore[attr-defined]
    libraries = dict(reading.scan.libraries)
    assert list(libraries) == [f"{SITE}/torch/lib/libtorch_cuda.so"]
    assert set(*libraries.values()) == {"sm_75", "sm_80", "sm_90", "compute_90"}
    assert reading.scan.has_cuda_compat
    assert reading.labels["io.gpuship.cuda"] == "12.4"
    needs = image_needs(reading.reference, reading.env, reading.labels, reading.scan)
    assert needs.content_cuda is not None
    assert needs.content_cuda.effective == "12.6"
    assert needs.content_cuda.min_driver == str(min_driver_for("12.6"))
    assert (needs.cuda, needs.cuda_source) == ("12.4", "label io.gpuship.cuda")


def test_shallow_needs_read_only_the_config(gpu_image: object, registry: Registry) -> None:
    push(registry.url, "image/needs-shallow", gpu_image, tag="v1")  # type: ignore[arg-type]
    reading = read_image(registry.ref("image/needs-shallow", "v1"), deep=False)
    assert reading.scan is None
    assert reading.env["CUDA_VERSION"] == "12.4.1"
    needs = image_needs(reading.reference, reading.env, reading.labels, reading.scan)
    assert needs.content_cuda is None and needs.library_targets == ()


def test_judgement_returns_findings_and_rules(gpu_image: object, tmp_path: Path) -> None:
    archive = write_docker_archive(tmp_path / "img.tar", gpu_image)  # type: ignore[arg-type]
    judgement = inspect_and_judge(
        f"docker-archive:{archive}", ImageStageConfig(), access=RegistryAccess()
    )
    fired = {finding.rule for finding in judgement.findings}
    assert rules.CUDA_CLAIM_WEAKER in fired  # io.gpuship.cuda=12.4 but torch needs 12.6
    assert rules.WEIGHTS in fired
    assert set(judgement.rules) == fired
    assert to_json(judgement.result)["cuda"]["effective"] == "12.6"


def test_archive_errors_are_clear(tmp_path: Path) -> None:
    from gpuship.image.location import open_source

    gz = tmp_path / "saved.tar.gz"
    gz.write_bytes(b"\x1f\x8b\x08\x00" + bytes(32))
    with pytest.raises(InputError, match="gunzip"):
        open_source(f"docker-archive:{gz}")
    empty = tmp_path / "empty.tar"
    with tarfile.open(empty, "w"):
        pass
    with pytest.raises(InputError, match=r"manifest\.json"):
        read_image(f"docker-archive:{empty}", deep=False)
    with pytest.raises(InputError, match="no OCI layout"):
        open_source(f"oci:{tmp_path}/missing:tag")


def test_lint_cli_merges_dockerfile_and_image_findings(gpu_image: object, tmp_path: Path) -> None:
    import json
    import subprocess
    import sys

    archive = write_docker_archive(tmp_path / "img.tar", gpu_image)  # type: ignore[arg-type]
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("FROM ubuntu\nCOPY . /srv\n")
    command = [sys.executable, "-m", "gpuship", "lint", "--format", "json", "--fail-on", "never"]
    alone = subprocess.run(
        [*command, "--image", f"docker-archive:{archive}"],
        capture_output=True, text=True, cwd=tmp_path, check=True,
    )  # fmt: skip
    image_only = json.loads(alone.stdout)
    assert {f["rule"] for f in image_only["findings"]} >= {rules.WEIGHTS, rules.CUDA_CLAIM_WEAKER}
    assert image_only["result"]["files"] == []  # no Dockerfile searched for with --image only
    both = subprocess.run(
        [*command, "--image", f"docker-archive:{archive}", str(dockerfile)],
        capture_output=True, text=True, cwd=tmp_path, check=True,
    )  # fmt: skip
    merged = {f["rule"] for f in json.loads(both.stdout)["findings"]}
    assert any(rule.startswith("GSL") for rule in merged)
    assert {rules.WEIGHTS, rules.CUDA_CLAIM_WEAKER} <= merged
