"""Benchmark: `gpuship promote` vs `skopeo copy` for a 100 MB and a multi-GB image.

Starts its own docker-registry (distribution 2.8) on 127.0.0.1, pushes a candidate of the given
size untagged to `bench/src`, then times, one run each:
  - gpuship promote SRC@digest --tag 1.0.0 --move stable --to bench/gpuship-<size>  (cross repo)
  - gpuship promote SRC@digest --tag 1.0.1                                         (same repo)
  - the cross-repo promote again in-process (no interpreter start or imports)
  - skopeo copy --all --preserve-digests SRC@digest bench/skopeo-<size>:1.0.0      (cross repo,
    its blob-info cache emptied first: every byte streamed), then again to another repository
    (warm cache: skopeo mounts the blobs it now knows)
Wall time of the whole command, Python start included (`gpuship --version` is timed too, to
show how much of it is interpreter start). Usage:
  .venv/bin/python bench/promote/run.py [--sizes-mb 100,5120] [--json out.json]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path

import requests

from gpuship.registry.client import RegistryClient
from gpuship.reference import Repository, sha256_digest
from gpuship.release.config import ReleaseConfig
from gpuship.release.policy import TagKind, TagRequest
from gpuship.release.promote import ReleaseRequest, release

LAYER_MAX = 1 << 30  # 1 GiB per layer, as large images are usually split
CHUNK = 16 << 20


class _Generated(io.RawIOBase):
    """`size` bytes of deterministic content (a random 16 MiB block repeated, salted)."""

    def __init__(self, size: int, salt: bytes) -> None:
        super().__init__()
        self._left = size
        self._offset = 0
        self._block = hashlib.shake_256(salt).digest(CHUNK)

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        if self._left <= 0:
            return b""
        n = min(CHUNK if n < 0 else n, self._left, CHUNK - self._offset)
        data = self._block[self._offset : self._offset + n]
        self._offset = (self._offset + n) % CHUNK
        self._left -= n
        return data


def _digest_of(size: int, salt: bytes) -> str:
    hasher = hashlib.sha256()
    stream = _Generated(size, salt)
    while chunk := stream.read(CHUNK):
        hasher.update(chunk)
    return "sha256:" + hasher.hexdigest()


@contextmanager
def _registry(root: Path) -> Iterator[str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    root.mkdir(parents=True, exist_ok=True)
    config = root / "config.yml"
    config.write_text(
        "version: 0.1\nlog: {level: error, accesslog: {disabled: true}}\n"
        f"storage: {{filesystem: {{rootdirectory: {root / 'data'}}}, delete: {{enabled: true}}}}\n"
        f"http: {{addr: '127.0.0.1:{port}', secret: bench}}\n"
    )
    process = subprocess.Popen(
        ["docker-registry", "serve", str(config)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            try:
                if requests.get(f"http://127.0.0.1:{port}/v2/", timeout=1).status_code == 200:
                    break
            except requests.ConnectionError:
                time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=20)


def _push_candidate(client: RegistryClient, repo: Repository, size: int) -> str:
    layers = []
    left, number = size, 0
    while left > 0:
        layer_size = min(left, LAYER_MAX)
        salt = f"bench-{size}-{number}".encode()
        digest = _digest_of(layer_size, salt)
        client.upload_blob(repo, digest, _Generated(layer_size, salt), layer_size)  # type: ignore[arg-type]
        layers.append(
            {
                "mediaType": "application/vnd.oci.image.layer.v1.tar",
                "digest": digest,
                "size": layer_size,
            }
        )
        left -= layer_size
        number += 1
    config = json.dumps(
        {
            "created": "2026-01-01T00:00:00Z",
            "architecture": "amd64",
            "os": "linux",
            "rootfs": {"type": "layers", "diff_ids": [layer["digest"] for layer in layers]},
        }
    ).encode()
    client.upload_blob(repo, sha256_digest(config), io.BytesIO(config), len(config))
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": sha256_digest(config),
                "size": len(config),
            },
            "layers": layers,
        }
    ).encode()
    return client.put_manifest(
        repo.at(sha256_digest(manifest)), manifest, "application/vnd.oci.image.manifest.v1+json"
    )


def _in_process_promote(host: str, digest: str, target: str) -> float:
    """The same cross-repository promotion without interpreter start and imports."""
    config = ReleaseConfig()
    requests_ = (
        TagRequest("1.0.0", TagKind.IMMUTABLE),
        TagRequest("stable", TagKind.FLOATING),
    )
    started = time.perf_counter()
    with RegistryClient(environ={}) as client:
        source = Repository(host, "bench/src").at(digest)
        request = ReleaseRequest(source, Repository(host, target), requests_)
        outcome = release(client, request, config, environ={}, now=datetime.now(timezone.utc))
    elapsed = time.perf_counter() - started
    if not outcome.succeeded:
        sys.exit(f"in-process promote failed: {outcome.error}")
    return elapsed


def _timed(command: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        sys.exit(f"{command[0]} failed ({result.returncode}): {result.stderr[-2000:]}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes-mb", default="100,5120")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    gpuship = str(Path(sys.executable).with_name("gpuship"))
    skopeo = shutil.which("skopeo") or sys.exit("skopeo is not installed")
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-promote-") as temp:
        work = Path(temp)
        with _registry(work / "registry") as host, RegistryClient(environ={}) as client:
            for size_mb in (int(s) for s in args.sizes_mb.split(",")):
                source = Repository(host, "bench/src")
                started = time.perf_counter()
                digest = _push_candidate(client, source, size_mb << 20)
                push_s = time.perf_counter() - started
                src = f"{source}@{digest}"
                cross = _timed(
                    [
                        gpuship,
                        "promote",
                        src,
                        "--tag",
                        "1.0.0",
                        "--move",
                        "stable",
                        "--to",
                        f"{host}/bench/gpuship-{size_mb}",
                    ],
                    work,
                )
                same = _timed([gpuship, "promote", src, "--tag", f"1.0.{size_mb}"], work)
                # skopeo's blob-info cache (containers/image, /var/lib/containers/cache for
                # root) records where blobs already are; empty, skopeo streams every byte.
                for stale in Path("/var/lib/containers/cache").glob("blob-info-cache-v1.*"):
                    stale.unlink()
                skopeo_copy = [
                    skopeo,
                    "copy",
                    "--all",
                    "--preserve-digests",
                    "--src-tls-verify=false",
                    "--dest-tls-verify=false",
                    f"docker://{src}",
                ]
                copy = _timed([*skopeo_copy, f"docker://{host}/bench/skopeo-{size_mb}:1.0.0"], work)
                # Warm: the cache now knows the blobs' location, so skopeo mounts them.
                warm = _timed(
                    [*skopeo_copy, f"docker://{host}/bench/skopeo-warm-{size_mb}:1.0.0"], work
                )
                startup = _timed([gpuship, "--version"], work)
                in_process = _in_process_promote(host, digest, f"bench/inproc-{size_mb}")
                row = {
                    "size_mb": size_mb,
                    "gpuship_startup_s": round(startup, 3),
                    "push_candidate_s": round(push_s, 2),
                    "gpuship_cross_repo_s": round(cross, 3),
                    "gpuship_same_repo_s": round(same, 3),
                    "gpuship_in_process_cross_repo_s": round(in_process, 3),
                    "skopeo_cross_repo_empty_cache_s": round(copy, 3),
                    "skopeo_cross_repo_warm_cache_s": round(warm, 3),
                    "skopeo_empty_over_gpuship": round(copy / cross, 2),
                    "skopeo_warm_over_gpuship": round(warm / cross, 2),
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
