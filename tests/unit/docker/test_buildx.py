"""The `docker buildx build` command line for a cell (this host has no buildx to run it, so
the exact argv is what is tested; tests/integration/builder/test_build_auth.py runs it against
a recording stand-in)."""

from __future__ import annotations

import itertools
import stat
from pathlib import Path

from gpuship.docker.build import BuildRequest
from gpuship.docker.buildx import (
    BuildxOptions,
    buildx_available,
    buildx_command,
    write_secret_files,
)


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
    options = BuildxOptions(
        platforms=("linux/amd64", "linux/arm64"),
        cache_from="type=registry,ref=r.io/app-buildcache:c",
        cache_to="type=registry,ref=r.io/app-buildcache:c,mode=max",
    )
    argv = buildx_command(request, options, tmp_path / "meta.json", push=True)
    assert argv[:4] == ["docker", "buildx", "build", "--progress=plain"]
    pairs = list(itertools.pairwise(argv))
    assert ("--target", "runtime") in pairs
    assert ("--build-arg", "BASE_IMAGE=r.io/base:1@sha256:" + "a" * 64) in pairs
    assert ("--label", "io.gpuship.cuda=12.6") in pairs
    assert ("--tag", "r.io/app:cu126") in pairs
    assert ("--platform", "linux/amd64,linux/arm64") in pairs
    assert ("--cache-from", "type=registry,ref=r.io/app-buildcache:c") in pairs
    assert ("--cache-to", "type=registry,ref=r.io/app-buildcache:c,mode=max") in pairs
    assert ("--metadata-file", str(tmp_path / "meta.json")) in pairs
    assert "--push" in argv and "--load" not in argv
    assert argv[-1] == str(tmp_path)


def test_missing_docker_cli_means_no_buildx(tmp_path: Path) -> None:
    assert buildx_available({"PATH": str(tmp_path)}) is False


def test_secrets_ssh_attestations_and_no_cache(tmp_path: Path) -> None:
    request = BuildRequest(
        context=tmp_path, dockerfile=tmp_path / "Dockerfile", tags=("r.io/app:t",),
        build_args={}, labels={},
    )  # fmt: skip
    options = BuildxOptions(
        secrets=("id=hf_token,env=HF_TOKEN", "id=netrc,src=.netrc"),
        secret_values={"pip_conf": "[global]\nindex-url = https://user:pw@pypi.internal/simple\n"},
        ssh=("default", "deploy=/keys/deploy"),
        provenance="mode=max",
        sbom="true",
    )
    files = write_secret_files(options.secret_values, tmp_path)
    argv = buildx_command(request, options, tmp_path / "m.json", push=False, secret_files=files)
    assert argv == [
        "docker", "buildx", "build", "--progress=plain", "--file", str(tmp_path / "Dockerfile"),
        "--tag", "r.io/app:t",
        "--secret", "id=hf_token,env=HF_TOKEN",
        "--secret", "id=netrc,src=.netrc",
        "--secret", f"id=pip_conf,src={tmp_path / 'secret-0'}",
        "--ssh", "default",
        "--ssh", "deploy=/keys/deploy",
        "--provenance=mode=max",
        "--sbom=true",
        "--metadata-file", str(tmp_path / "m.json"),
        "--load",
        str(tmp_path),
    ]  # fmt: skip
    assert "pypi.internal" not in " ".join(argv)  # the value is in a file, not on the command line
    secret = tmp_path / "secret-0"
    assert secret.read_text() == options.secret_values["pip_conf"]
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
