"""`docker buildx build` as the builder when the buildx plugin is installed.

BuildKit builds and pushes every tag in one step, with the cell's cache (registry cache in its
own repository, or the GitHub Actions cache; see `matrix/config.py` `CacheConfig`), BuildKit
secrets and SSH agents, and provenance/SBOM attestations as docker/build-push-action passes them.
Secret values never reach the command line: each is written to a 0600 file in a 0700 temporary
directory and passed as `--secret id=ID,src=FILE` (as build-push-action does). Credentials come
from a temporary DOCKER_CONFIG holding only the registries this build needs
(`builder/registry_auth.py`). The image digest is read from the `--metadata-file`
(`containerimage.digest`, as docker/build-push-action does).

An adapter: it runs the command and hands back what it printed; what a failure means (which
Dockerfile line, a refused push) is the build stage's reading (`builder/build_log.py`).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gpuship.docker.build import BuildRequest
from gpuship.errors import DockerUnavailable


class BuildxFailed(Exception):
    """`docker buildx build` exited with an error; `output` is every line it printed."""

    def __init__(self, output: Sequence[str]) -> None:
        super().__init__("docker buildx build failed")
        self.output = tuple(output)


def buildx_available(environ: Mapping[str, str]) -> bool:
    """True when `docker buildx version` works (the plugin is installed)."""
    try:
        result = subprocess.run(
            ["docker", "buildx", "version"],
            env=dict(environ),
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return result.returncode == 0


@dataclass(frozen=True)
class BuildxOptions:
    """What buildx gets besides the request: platforms, cache, secrets, SSH, attestations."""

    platforms: Sequence[str] = ()
    cache_from: str | None = None
    cache_to: str | None = None
    # `--secret` specs naming an environment variable or a file (`id=x,env=VAR`, `id=x,src=F`)
    secrets: Sequence[str] = ()
    # secret values by id, written to private files for the build
    secret_values: Mapping[str, str] = field(default_factory=dict)
    ssh: Sequence[str] = ()
    provenance: str | None = None
    sbom: str | None = None


def buildx_command(
    request: BuildRequest,
    options: BuildxOptions,
    metadata_file: Path,
    push: bool,
    secret_files: Mapping[str, Path] | None = None,
) -> list[str]:
    """The argv of one `docker buildx build` for a cell."""
    argv = ["docker", "buildx", "build", "--progress=plain", "--file", str(request.dockerfile)]
    if request.target:
        argv += ["--target", request.target]
    for name, value in request.build_args.items():
        argv += ["--build-arg", f"{name}={value}"]
    for name, value in request.labels.items():
        argv += ["--label", f"{name}={value}"]
    for tag in request.tags:
        argv += ["--tag", tag]
    if options.platforms:
        argv += ["--platform", ",".join(options.platforms)]
    if request.network:
        argv += ["--network", request.network]
    if options.cache_from:
        argv += ["--cache-from", options.cache_from]
    if options.cache_to:
        argv += ["--cache-to", options.cache_to]
    for spec in options.secrets:
        argv += ["--secret", spec]
    for secret_id, path in (secret_files or {}).items():
        argv += ["--secret", f"id={secret_id},src={path}"]
    for spec in options.ssh:
        argv += ["--ssh", spec]
    if options.provenance is not None:
        argv += [f"--provenance={options.provenance}"]
    if options.sbom is not None:
        argv += [f"--sbom={options.sbom}"]
    argv += ["--metadata-file", str(metadata_file)]
    argv += ["--push"] if push else ["--load"]
    argv.append(str(request.context))
    return argv


def write_secret_files(values: Mapping[str, str], directory: Path) -> dict[str, Path]:
    """Each secret value in its own 0600 file under `directory`; {id: path}."""
    files: dict[str, Path] = {}
    for number, (secret_id, value) in enumerate(values.items()):
        path = directory / f"secret-{number}"
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(value)
        files[secret_id] = path
    return files


def build_with_buildx(
    request: BuildRequest,
    options: BuildxOptions,
    push: bool,
    environ: Mapping[str, str],
    progress: Callable[[str], None],
) -> dict[str, Any]:
    """Build (and push) with BuildKit; returns the metadata file's JSON, or BuildxFailed with
    what it printed. Each line goes to `progress` as it comes. `environ` is the scoped
    environment (its DOCKER_CONFIG holds only this build's credentials)."""
    with tempfile.TemporaryDirectory(prefix="gpuship-buildx-") as tmp:
        metadata_file = Path(tmp) / "metadata.json"
        secret_files = write_secret_files(options.secret_values, Path(tmp))
        argv = buildx_command(request, options, metadata_file, push, secret_files)
        output: list[str] = []
        try:
            process = subprocess.Popen(
                argv,
                env=dict(environ),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                errors="replace",
            )
        except OSError as exc:
            raise DockerUnavailable(f"cannot run docker buildx: {exc}") from None
        assert process.stdout is not None
        for raw in process.stdout:
            line = raw.rstrip("\n")
            output.append(line)
            progress(line)
        if process.wait() != 0:
            raise BuildxFailed(output)
        data: dict[str, Any] = json.loads(metadata_file.read_text(encoding="utf-8"))
        return data
