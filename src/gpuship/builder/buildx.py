"""`docker buildx build` as the builder when the buildx plugin is installed.

BuildKit builds and pushes every tag in one step, with the registry cache of the cell
(`--cache-from/--cache-to type=registry,ref=<repo>:buildcache-<cell>,mode=max`, see
docs.docker.com/build/cache/backends/registry). The image digest is read from the
`--metadata-file` (`containerimage.digest`, as docker/build-push-action does).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gpuship.builder.build_log import buildkit_failure
from gpuship.builder.engine import BuildFailed, BuildRequest, Progress
from gpuship.errors import DockerUnavailable

# BuildKit's words for a push the registry turned down (vs a failed build step).
_PUSH_REFUSED = ("failed to push", "push access denied", "unauthorized", "denied:")


class PushRefusedByBuildx(Exception):
    """BuildKit built the image but the registry refused the push."""


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


def buildx_command(
    request: BuildRequest,
    platforms: Sequence[str],
    cache_from: str,
    cache_to: str,
    metadata_file: Path,
    push: bool,
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
    if platforms:
        argv += ["--platform", ",".join(platforms)]
    if request.network:
        argv += ["--network", request.network]
    argv += ["--cache-from", cache_from, "--cache-to", cache_to]
    argv += ["--metadata-file", str(metadata_file)]
    argv += ["--push"] if push else ["--load"]
    argv.append(str(request.context))
    return argv


def build_with_buildx(
    request: BuildRequest,
    platforms: Sequence[str],
    cache_from: str,
    cache_to: str,
    push: bool,
    environ: Mapping[str, str],
    progress: Progress,
) -> dict[str, Any]:
    """Build (and push) with BuildKit; returns the metadata file's JSON."""
    with tempfile.TemporaryDirectory(prefix="gpuship-buildx-") as tmp:
        metadata_file = Path(tmp) / "metadata.json"
        argv = buildx_command(request, platforms, cache_from, cache_to, metadata_file, push)
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
            failure = buildkit_failure(output, request.dockerfile.name)
            if any(marker in failure.message.lower() for marker in _PUSH_REFUSED):
                raise PushRefusedByBuildx(failure.message)
            raise BuildFailed(failure)
        data: dict[str, Any] = json.loads(metadata_file.read_text(encoding="utf-8"))
        return data
