"""Benchmark `gpuship inspect --compare` against inspecting the candidate alone and pulling both.

Two images in a local registry share their base layers and differ in one top layer each
(generated files, gzip layers, as bench/inspect makes them). In one run, with hyperfine:
  * `gpuship inspect CANDIDATE`                   - what the comparison is measured against
  * `gpuship inspect CANDIDATE --compare REF`     - both images; a shared blob is read once
  * `docker pull CANDIDATE && docker pull REF`    - what a user would do before comparing with
                                                    container-diff or dive (both removed first)
The registry and the engine are the test bed's (tests/bed), started privately for the run.

    .venv/bin/python bench/compare/run.py [--base-mib 1536] [--top-mib 512] [--layer-mib 512]
        [--runs 5] [--pull-runs 3]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import requests

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from bed.docker_engine import run_docker_engine  # noqa: E402
from bed.registry import run_registry  # noqa: E402

WORK = ROOT / "bench" / ".work" / "compare"
# The interpreter running the bench, so a worktree's code (PYTHONPATH=src) is what is measured.
GPUSHIP = f"{sys.executable} -m gpuship"
REPO = "bench/compare"


def _inspect_bench() -> Any:
    """bench/inspect/run.py, for its layer generator (one way to make bench layers)."""
    spec = importlib.util.spec_from_file_location("bench_inspect", ROOT / "bench/inspect/run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.WORK = WORK
    return module


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return "sha256:" + digest.hexdigest()


def _push_blob(url: str, data: bytes | Path, digest: str) -> None:
    if requests.head(f"{url}/v2/{REPO}/blobs/{digest}", timeout=60).status_code == 200:
        return  # a layer both images hold is pushed once
    start = requests.post(f"{url}/v2/{REPO}/blobs/uploads/", timeout=60)
    start.raise_for_status()
    location = start.headers["Location"]
    location = url + location if location.startswith("/") else location
    separator = "&" if "?" in location else "?"
    body = data.open("rb") if isinstance(data, Path) else data
    try:
        requests.put(
            f"{location}{separator}digest={digest}", data=body, timeout=900
        ).raise_for_status()
    finally:
        if isinstance(data, Path):
            body.close()  # type: ignore[union-attr]


def push_image(url: str, tag: str, layers: list[tuple[str, str, Path]]) -> None:
    """Push (diff_id, digest, gzip file) layers as REPO:tag."""
    for _, digest, gz_path in layers:
        _push_blob(url, gz_path, digest)
    config = json.dumps(
        {
            "architecture": "amd64",
            "os": "linux",
            "config": {"Env": ["PATH=/usr/bin"]},
            "rootfs": {"type": "layers", "diff_ids": [diff_id for diff_id, _, _ in layers]},
            "history": [{"created_by": f"bench layer {i}"} for i in range(len(layers))],
        }
    ).encode()
    config_digest = "sha256:" + hashlib.sha256(config).hexdigest()
    _push_blob(url, config, config_digest)
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {
            "mediaType": "application/vnd.oci.image.config.v1+json",
            "digest": config_digest,
            "size": len(config),
        },
        "layers": [
            {
                "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                "digest": digest,
                "size": gz_path.stat().st_size,
            }
            for _, digest, gz_path in layers
        ],
    }
    requests.put(
        f"{url}/v2/{REPO}/manifests/{tag}",
        data=json.dumps(manifest).encode(),
        headers={"Content-Type": "application/vnd.oci.image.manifest.v1+json"},
        timeout=60,
    ).raise_for_status()


def make_layers(count: int, first_seed: int, layer_mib: int) -> list[tuple[str, str, Path]]:
    maker = _inspect_bench()
    layers = []
    for seed in range(first_seed, first_seed + count):
        tar_path, gz_path = maker.make_layer(seed, layer_mib)
        layers.append((_digest(tar_path), _digest(gz_path), gz_path))
        tar_path.unlink()
    return layers


def hyperfine(
    commands: dict[str, tuple[str, str]], runs: int, env: dict[str, str]
) -> list[dict[str, Any]]:
    """name -> (prepare, command); hyperfine's results, every run's time kept."""
    export = WORK / "hyperfine.json"
    argv = ["hyperfine", "--runs", str(runs), "--export-json", str(export), "--style", "basic"]
    for name, (prepare, command) in commands.items():
        argv += ["--prepare", prepare or "true", "--command-name", name, command]
    subprocess.run(argv, check=True, cwd=WORK, env={**os.environ, **env})
    results: list[dict[str, Any]] = json.loads(export.read_text())["results"]
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-mib", type=int, default=1536, help="shared base layers")
    parser.add_argument("--top-mib", type=int, default=512, help="each image's own top layer")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pull-runs", type=int, default=3)
    parser.add_argument("--layer-mib", type=int, default=512)
    args = parser.parse_args()
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    started = time.perf_counter()
    size = args.layer_mib
    base = make_layers(args.base_mib // size, 0, size)
    candidate_top = make_layers(args.top_mib // size, 100, size)
    reference_top = make_layers(args.top_mib // size, 200, size)
    print(f"generated layers in {time.perf_counter() - started:.0f}s", flush=True)
    with run_registry(WORK / "registry") as registry, run_docker_engine(WORK) as engine:
        push_image(registry.url, "candidate", base + candidate_top)
        push_image(registry.url, "reference", base + reference_top)
        for _, _, gz_path in base + candidate_top + reference_top:
            gz_path.unlink()  # the registry holds the only copy now
        candidate, reference = registry.ref(REPO, "candidate"), registry.ref(REPO, "reference")
        docker = f"docker -H {engine.env['DOCKER_HOST']}"
        gpuship = f"{GPUSHIP} --format json --output /dev/null --fail-on never inspect"
        results = hyperfine(
            {
                "gpuship inspect CANDIDATE": ("", f"{gpuship} {candidate}"),
                "gpuship inspect CANDIDATE --compare REF": (
                    "",
                    f"{gpuship} {candidate} --compare {reference}",
                ),
            },
            args.runs,
            {},
        )
        results += hyperfine(
            {
                "docker pull CANDIDATE && docker pull REF": (
                    f"{docker} rmi -f {candidate} {reference} >/dev/null 2>&1; true",
                    f"{docker} pull -q {candidate} && {docker} pull -q {reference}",
                )
            },
            args.pull_runs,
            {},
        )
    report(results, args)


def report(results: list[dict[str, Any]], args: argparse.Namespace) -> None:
    inspect_times = results[0]["times"]
    lines = [
        f"images: {args.base_mib} MiB shared base + {args.top_mib} MiB own top layer each "
        f"(uncompressed), gzip; {os.cpu_count()} CPUs",
        "",
        "| command | runs | mean s | min s | max s | stdev s | vs inspect alone |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for result in results:
        times = result["times"]
        lines.append(
            f"| `{result['command']}` | {len(times)} | {result['mean']:.2f} | {min(times):.2f} | "
            f"{max(times):.2f} | {statistics.stdev(times) if len(times) > 1 else 0:.2f} | "
            f"{result['mean'] / statistics.mean(inspect_times):.2f}x |"
        )
    text = "\n".join(lines) + "\n"
    (WORK / "results.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
