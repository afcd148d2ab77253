"""Images made by the bed helpers are real: the engine builds and loads them, the registry
stores them, and docker pulls what the pure-Python writer pushed."""

from __future__ import annotations

import io
import json
import subprocess
import tarfile
from pathlib import Path

import pytest
import requests

from bed.docker_engine import DockerEngine
from bed.images import FileSpec, build_scratch_image, layer_tar
from bed.oci import (
    OCI_INDEX,
    OCI_MANIFEST,
    Platform,
    make_image,
    make_index,
    push,
    write_docker_archive,
    write_oci_layout,
)
from bed.process import require_binary
from bed.registry import Registry

pytestmark = pytest.mark.integration

CUDA_ENV = {"NVIDIA_REQUIRE_CUDA": "cuda>=12.4 brand=tesla,driver>=470,driver<471"}


def test_layer_tar_is_deterministic_and_implies_parent_dirs() -> None:
    files = {"opt/app/run.sh": FileSpec(b"#!/bin/sh\n", mode=0o755), "etc/motd": b"hi"}
    first = layer_tar(files)
    assert first == layer_tar(dict(reversed(files.items())))
    with tarfile.open(fileobj=io.BytesIO(first)) as tar:
        members = {member.name: member for member in tar.getmembers()}
    assert sorted(members) == ["etc", "etc/motd", "opt", "opt/app", "opt/app/run.sh"]
    assert members["opt/app"].isdir()
    assert members["opt/app/run.sh"].mode == 0o755


def test_engine_builds_scratch_image_with_env_and_labels(docker_engine: DockerEngine) -> None:
    image = build_scratch_image(
        docker_engine,
        "bed/scratch:env",
        [{"a.txt": b"a"}, {"models/w.bin": b"\0" * 4096}],
        env=CUDA_ENV,
        labels={"org.opencontainers.image.title": "bed test"},
        extra_lines=["USER 1000"],
    )
    config = image.attrs["Config"]
    assert "NVIDIA_REQUIRE_CUDA=" + CUDA_ENV["NVIDIA_REQUIRE_CUDA"] in config["Env"]
    assert config["Labels"]["org.opencontainers.image.title"] == "bed test"
    assert config["User"] == "1000"
    assert len(image.attrs["RootFS"]["Layers"]) == 2


def test_oci_index_pushed_over_http_is_pulled_by_docker(
    registry: Registry, docker_engine: DockerEngine
) -> None:
    amd64 = make_image([{"bin/arch": b"amd64"}], env=CUDA_ENV)
    arm64 = make_image(
        [{"bin/arch": b"arm64"}], env=CUDA_ENV, platform=Platform(architecture="arm64")
    )
    index = make_index([amd64, arm64])
    digest = push(registry.url, "bed/multi", index, tag="v1")
    response = requests.get(
        f"{registry.url}/v2/bed/multi/manifests/v1",
        headers={"Accept": f"{OCI_INDEX}, {OCI_MANIFEST}"},
        timeout=5,
    )
    assert response.headers["Docker-Content-Digest"] == digest
    assert [m["platform"]["architecture"] for m in response.json()["manifests"]] == [
        "amd64",
        "arm64",
    ]
    pulled = docker_engine.client.images.pull(registry.ref("bed/multi", "v1"))
    assert pulled.attrs["Config"]["Env"] == [
        f"NVIDIA_REQUIRE_CUDA={CUDA_ENV['NVIDIA_REQUIRE_CUDA']}"
    ]


def test_basic_auth_push_needs_credentials(registry_basic_auth: Registry) -> None:
    image = make_image([{"x": b"x"}], docker_media_types=True)
    with pytest.raises(requests.HTTPError):
        push(registry_basic_auth.url, "bed/auth", image, tag="v1")
    credentials = registry_basic_auth.auth
    digest = push(registry_basic_auth.url, "bed/auth", image, tag="v1", auth=credentials)
    head = requests.head(
        f"{registry_basic_auth.url}/v2/bed/auth/manifests/{digest}",
        auth=registry_basic_auth.auth,
        headers={"Accept": image.manifest.media_type},
        timeout=5,
    )
    assert head.status_code == 200


def test_docker_archive_loads_into_engine(tmp_path: Path, docker_engine: DockerEngine) -> None:
    image = make_image([{"etc/a": b"1"}, {"etc/b": b"2"}], labels={"k": "v"})
    archive = write_docker_archive(tmp_path / "img.tar", image, ["bed/archive:1"])
    (loaded,) = docker_engine.client.images.load(archive.read_bytes())
    assert loaded.attrs["Config"]["Labels"] == {"k": "v"}
    assert loaded.id == image.config.digest


def test_oci_layout_holds_every_blob(tmp_path: Path) -> None:
    image = make_image([{"a": b"a"}])
    layout = write_oci_layout(tmp_path / "layout", make_index([image]), tag="v1")
    for blob in (image.manifest, image.config, *image.layers):
        stored = layout / "blobs/sha256" / blob.digest.removeprefix("sha256:")
        assert stored.read_bytes() == blob.data
    assert (layout / "oci-layout").exists()


def test_oci_layout_is_read_by_skopeo(tmp_path: Path) -> None:
    skopeo = require_binary("skopeo")
    arm64 = make_image([{"a": b"b"}], platform=Platform(architecture="arm64", variant="v8"))
    index = make_index([make_image([{"a": b"a"}]), arm64])
    layout = write_oci_layout(tmp_path / "layout", index, "v1")
    inspected = subprocess.run(
        [skopeo, "inspect", "--override-arch=arm64", "--override-variant=v8", f"oci:{layout}:v1"],
        capture_output=True,
        text=True,
        check=True,
    )
    described = json.loads(inspected.stdout)
    assert described["Digest"] == index.digest
    assert described["Architecture"] == "arm64"
    assert described["Layers"] == [arm64.layers[0].digest]
