"""The `docker buildx build` command line for a cell (this host has no buildx to run it)."""

from __future__ import annotations

import itertools
from pathlib import Path

from gpuship.builder.buildx import buildx_available, buildx_command
from gpuship.builder.engine import BuildRequest


def test_command_carries_the_cell(tmp_path: Path) -> None:
    request = BuildRequest(
        context=tmp_path,
        dockerfile=tmp_path / "Dockerfile",
        tags=("r.io/app:sha-1234567-c", "r.io/app:cu126"),
        build_args={"BASE_IMAGE": "r.io/base:1@sha256:" + "a" * 64},
        labels={"io.gpuship.cuda": "12.6"},
        target="runtime",
        network="none",
    )
    argv = buildx_command(
        request,
        ["linux/amd64", "linux/arm64"],
        "type=registry,ref=r.io/app:buildcache-c",
        "type=registry,ref=r.io/app:buildcache-c,mode=max",
        tmp_path / "meta.json",
        push=True,
    )
    assert argv[:4] == ["docker", "buildx", "build", "--progress=plain"]
    pairs = list(itertools.pairwise(argv))
    assert ("--target", "runtime") in pairs
    assert ("--build-arg", "BASE_IMAGE=r.io/base:1@sha256:" + "a" * 64) in pairs
    assert ("--label", "io.gpuship.cuda=12.6") in pairs
    assert ("--tag", "r.io/app:cu126") in pairs
    assert ("--platform", "linux/amd64,linux/arm64") in pairs
    assert ("--cache-to", "type=registry,ref=r.io/app:buildcache-c,mode=max") in pairs
    assert ("--metadata-file", str(tmp_path / "meta.json")) in pairs
    assert "--push" in argv and "--load" not in argv
    assert argv[-1] == str(tmp_path)


def test_missing_docker_cli_means_no_buildx(tmp_path: Path) -> None:
    assert buildx_available({"PATH": str(tmp_path)}) is False
