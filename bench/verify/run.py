"""Benchmark: time to a `gpuship verify` verdict (image needs read from the registry, no pull)
vs `docker pull` of the same multi-GB image through the engine - what a job otherwise spends
before it can find out that the host cannot run the image.

Runs against a private docker-registry and dockerd (the test bed's, tests/bed), a GPU host
described to the NVML stand-in, and an image of incompressible layers (model-weight-like).
One run each, as the issue asks. Usage: .venv/bin/python bench/verify/run.py [GiB]
Results go to stdout; copy them into RESULTS.md.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from bed import hosts  # noqa: E402
from bed.docker_engine import run_docker_engine  # noqa: E402
from bed.nvml import build_stub, stub_env, write_description  # noqa: E402
from bed.registry import run_registry  # noqa: E402
from unit.compat.require_values import IMAGES  # noqa: E402

WORK = ROOT / "bench" / ".work" / "verify"
LAYER_MIB = 512
CHUNK = 8 * 2**20


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while block := stream.read(CHUNK):
            digest.update(block)
    return f"sha256:{digest.hexdigest()}"


def make_layer(path: Path, index: int) -> tuple[Path, str]:
    """A gzip'd tar holding one file of random bytes; returns (blob path, diff_id)."""
    tar_path = path.with_suffix(".tar")
    size = LAYER_MIB * 2**20
    with tarfile.open(tar_path, "w") as archive:
        info = tarfile.TarInfo(f"models/shard-{index}.safetensors")
        info.size = size
        reader = io.BufferedReader(io.BytesIO(os.urandom(size)))
        archive.addfile(info, reader)
    diff_id = sha256_file(tar_path)
    with tar_path.open("rb") as source, gzip.open(path, "wb", compresslevel=1) as target:
        shutil.copyfileobj(source, target, CHUNK)
    tar_path.unlink()
    return path, diff_id


def push_blob(session: requests.Session, url: str, repo: str, path: Path) -> dict[str, object]:
    digest = sha256_file(path)
    started = session.post(f"{url}/v2/{repo}/blobs/uploads/", timeout=60)
    started.raise_for_status()
    location = started.headers["Location"]
    location = location if location.startswith("http") else url + location
    with path.open("rb") as body:
        done = session.put(
            location,
            params={"digest": digest},
            data=body,
            headers={"Content-Type": "application/octet-stream"},
            timeout=600,
        )
    done.raise_for_status()
    return {"digest": digest, "size": path.stat().st_size}


def push_image(url: str, repo: str, tag: str, layers: list[tuple[Path, str]]) -> int:
    """Push layers + config + manifest; returns the compressed size."""
    config = {
        "architecture": "amd64",
        "os": "linux",
        "config": {"Env": [f"{k}={v}" for k, v in IMAGES["12.8"].items()]},
        "rootfs": {"type": "layers", "diff_ids": [diff for _, diff in layers]},
    }
    config_path = WORK / "config.json"
    config_path.write_bytes(json.dumps(config).encode())
    with requests.Session() as session:
        layer_descs = [
            {
                "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                **push_blob(session, url, repo, p),
            }
            for p, _ in layers
        ]
        config_desc = {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            **push_blob(session, url, repo, config_path),
        }
        manifest = {
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": config_desc,
            "layers": layer_descs,
        }
        session.put(
            f"{url}/v2/{repo}/manifests/{tag}",
            data=json.dumps(manifest),
            headers={"Content-Type": "application/vnd.oci.image.manifest.v1+json"},
            timeout=60,
        ).raise_for_status()
    return sum(int(d["size"]) for d in layer_descs)


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    return time.perf_counter() - start, done


def main() -> None:
    gib = float(sys.argv[1]) if len(sys.argv) > 1 else 4.0
    if WORK.exists():
        shutil.rmtree(WORK)
    WORK.mkdir(parents=True)
    try:
        run(gib)
    finally:
        shutil.rmtree(WORK, ignore_errors=True)  # GBs of layers and registry blobs


def run(gib: float) -> None:
    count = max(1, round(gib * 1024 / LAYER_MIB))
    layers = [make_layer(WORK / f"layer{n}.tar.gz", n) for n in range(count)]
    stub = build_stub(ROOT / "tests" / ".build")
    host = write_description(hosts.A100_525, WORK / "host.json")
    with run_registry(WORK / "registry") as registry, run_docker_engine(WORK) as engine:
        compressed = push_image(registry.url, "bench/verify", "12.8", layers)
        ref = f"{registry.host}/bench/verify:12.8"
        env = stub_env(stub, host, os.environ) | engine.env
        verify_s, verdict = timed([sys.executable, "-m", "gpuship", "verify", ref], env)
        pull_s, pulled = timed(["docker", "pull", "-q", ref], env)
        if pulled.returncode != 0:
            raise SystemExit(f"docker pull failed: {pulled.stderr}")
    gib_pushed = compressed / 2**30
    print(
        f"image: {count} x {LAYER_MIB} MiB incompressible layers, {gib_pushed:.2f} GiB compressed"
    )
    print(f"gpuship verify (exit {verdict.returncode}): {verify_s:.2f} s")
    print(f"docker pull: {pull_s:.2f} s")
    print(f"ratio: {pull_s / verify_s:.0f}x")
    print("verdict line:", verdict.stdout.splitlines()[0] if verdict.stdout else verdict.stderr)


if __name__ == "__main__":
    main()
