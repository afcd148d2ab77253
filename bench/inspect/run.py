"""Benchmark `gpuship inspect` on a multi-GB image in a local registry.

Compares, over the same image (generated files, ~2 GiB uncompressed, gzip layers):
  * `gpuship inspect REF`        - streams the blobs from the registry over HTTP, verifies
                                    digests and diff_ids, walks every tar header, reads ELF/weights
  * `gzip -dc BLOB | tar -t`      - the same blobs from the registry's disk, one after another
  * `docker save IMG | tar -t`    - the path dive takes (export through the engine), after a pull
  * `gpuship inspect docker://IMG`
Peak memory comes from `/usr/bin/time -v`. The registry and the engine are the test bed's
(tests/bed), started privately for the run.

    .venv/bin/python bench/inspect/run.py [--size-mib 2048] [--layers 4]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

import requests  # noqa: E402
from isal import igzip_threaded  # noqa: E402

from bed.docker_engine import run_docker_engine  # noqa: E402
from bed.registry import run_registry  # noqa: E402

WORK = ROOT / "bench" / ".work" / "inspect"
GPUSHIP = ROOT / ".venv" / "bin" / "gpuship"
FILE_MIB = 16
REPO = "bench/inspect"


def _file_content(rng: random.Random, size: int) -> bytes:
    """Half incompressible bytes, half text-like lines: roughly what packages look like."""
    half = size // 2
    words = [f"line {rng.randrange(10**6)} value={rng.random():.6f}\n".encode() for _ in range(512)]
    text = b"".join(rng.choice(words) for _ in range(half // 24 + 1))[: size - half]
    return rng.randbytes(half) + text


def make_layer(index: int, size_mib: int) -> tuple[Path, Path]:
    rng = random.Random(index)  # noqa: S311 - reproducible bench data, not secrets
    tar_path = WORK / f"layer{index}.tar"
    with tarfile.open(tar_path, "w", format=tarfile.PAX_FORMAT) as archive:
        for number in range(size_mib // FILE_MIB):
            data = _file_content(rng, FILE_MIB << 20)
            info = tarfile.TarInfo(f"data/layer{index}/dir{number % 8}/file{number}.bin")
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    gz_path = tar_path.with_suffix(".tar.gz")
    with (
        tar_path.open("rb") as source,
        igzip_threaded.open(gz_path, "wb", compresslevel=2, threads=2) as out,
    ):
        shutil.copyfileobj(source, out, 1 << 20)
    return tar_path, gz_path


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return "sha256:" + digest.hexdigest()


def push_blob(url: str, path: Path | None, data: bytes | None, digest: str) -> None:
    start = requests.post(f"{url}/v2/{REPO}/blobs/uploads/", timeout=60)
    start.raise_for_status()
    location = start.headers["Location"]
    if location.startswith("/"):
        location = url + location
    separator = "&" if "?" in location else "?"
    body = path.open("rb") if path is not None else data
    try:
        done = requests.put(f"{location}{separator}digest={digest}", data=body, timeout=600)
    finally:
        if path is not None:
            body.close()  # type: ignore[union-attr]
    done.raise_for_status()


def push_image(url: str, layers: list[tuple[Path, Path]]) -> tuple[str, list[str]]:
    descriptors, diff_ids = [], []
    for tar_path, gz_path in layers:
        digest = sha256_file(gz_path)
        push_blob(url, gz_path, None, digest)
        descriptors.append(
            {
                "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                "digest": digest,
                "size": gz_path.stat().st_size,
            }
        )
        diff_ids.append(sha256_file(tar_path))
    config = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": {"Env": ["PATH=/usr/bin"]},
            "rootfs": {"type": "layers", "diff_ids": diff_ids},
            "history": [{"created_by": f"bench layer {i}"} for i in range(len(layers))],
        }
    ).encode()
    config_digest = "sha256:" + hashlib.sha256(config).hexdigest()
    push_blob(url, None, config, config_digest)
    manifest = json.dumps(
        {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": {
                "mediaType": "application/vnd.oci.image.config.v1+json",
                "digest": config_digest,
                "size": len(config),
            },
            "layers": descriptors,
        }
    ).encode()
    answer = requests.put(
        f"{url}/v2/{REPO}/manifests/v1",
        data=manifest,
        headers={"Content-Type": "application/vnd.oci.image.manifest.v1+json"},
        timeout=60,
    )
    answer.raise_for_status()
    return answer.headers.get("Docker-Content-Digest", ""), [d["digest"] for d in descriptors]


def timed(command: list[str], env: dict[str, str] | None = None) -> tuple[float, int | None]:
    """Wall seconds and peak RSS (KiB, from /usr/bin/time -v) of a command."""
    started = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-v", *command],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        check=False,
    )
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"{command} failed ({done.returncode}): {done.stderr[-2000:]}")
    match = re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr)
    return elapsed, int(match.group(1)) if match else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mib", type=int, default=2048)
    parser.add_argument("--layers", type=int, default=4)
    args = parser.parse_args()
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    started = time.perf_counter()
    layers = [make_layer(i, args.size_mib // args.layers) for i in range(args.layers)]
    print(f"generated {args.layers} layers in {time.perf_counter() - started:.1f}s", flush=True)
    tar_bytes = sum(tar.stat().st_size for tar, _ in layers)
    gz_bytes = sum(gz.stat().st_size for _, gz in layers)
    rows: list[tuple[str, float, int | None]] = []
    with run_registry(WORK / "registry") as registry:
        _, digests = push_image(registry.url, layers)
        for path in [tar for tar, _ in layers] + [gz for _, gz in layers]:
            path.unlink()  # the registry holds the only copy now
        reference = registry.ref(REPO, "v1")
        rows.append(
            (
                "gpuship inspect (registry)",
                *timed([str(GPUSHIP), "--format", "json", "inspect", reference]),
            )
        )
        blob_files = [
            registry.root / "data/docker/registry/v2/blobs/sha256" / d[7:9] / d[7:] / "data"
            for d in digests
        ]
        loop = "; ".join(f"gzip -dc '{blob}' | tar -t > /dev/null" for blob in blob_files)
        rows.append(("gzip -dc | tar -t (same blobs, from disk)", *timed(["bash", "-c", loop])))
        with run_docker_engine(WORK) as engine:
            env = engine.env
            pull_started = time.perf_counter()
            engine.client.images.pull(reference)
            pull_s = time.perf_counter() - pull_started
            save = f"docker save '{reference}' | tar -t > /dev/null"
            rows.append(
                ("docker save | tar -t (engine, after pull)", *timed(["bash", "-c", save], env))
            )
            rows.append(("docker pull (needed first by dive)", pull_s, None))
            rows.append(
                (
                    "gpuship inspect docker:// (engine)",
                    *timed(
                        [str(GPUSHIP), "--format", "json", "inspect", f"docker://{reference}"], env
                    ),
                )
            )
    baseline = rows[0][1]
    lines = [
        f"image: {args.layers} gzip layers, {tar_bytes / 2**30:.2f} GiB uncompressed, "
        f"{gz_bytes / 2**30:.2f} GiB compressed; {os.cpu_count()} CPUs",
        "",
        "| tool | seconds | MB/s (uncompressed) | vs gpuship | peak RSS |",
        "|---|---:|---:|---:|---:|",
    ]
    for name, seconds, rss in rows:
        rate = tar_bytes / 1e6 / seconds
        memory = f"{rss / 1024:.0f} MiB" if rss else "-"
        lines.append(
            f"| {name} | {seconds:.1f} | {rate:.0f} | {seconds / baseline:.2f}x | {memory} |"
        )
    text = "\n".join(lines) + "\n"
    (WORK / "results.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
