"""Benchmark: expanding a 1,000-cell matrix with `gpuship matrix`.

Writes a gpuship.yaml whose image has 1,000 valid cells (CUDA releases from the knowledge
base x python x a custom axis, sm_80/sm_90 targets, build args and tags), then times:

- `gpuship matrix` end to end (process start, config load, knowledge base, validation, JSON),
  with hyperfine;
- the same expansion without validation, as a user would otherwise script it
  (`python3 -c` itertools.product + json.dumps), with hyperfine;
- the in-process planning alone (`plan_image`), best of 5.

Usage: .venv/bin/python bench/matrix/run.py   (results go to bench/.work/matrix/)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

from gpuship.cli.config_catalog import load_config
from gpuship.cuda.drivers import known_cuda_releases
from gpuship.cuda.errors import UnknownVersion
from gpuship.cuda.toolkits import can_compile
from gpuship.matrix.cells import plan_image
from gpuship.matrix.targets import image_targets

ROOT = Path(__file__).resolve().parents[2]
WORK = ROOT / "bench" / ".work" / "matrix"
GPUSHIP = str(Path(sys.executable).with_name("gpuship"))
PYTHONS = ["3.9", "3.10", "3.11", "3.12", "3.13"]
NAIVE = """\
import itertools, json, sys
axes = json.load(open(sys.argv[1]))
print(json.dumps({"include": [dict(zip(axes, p)) for p in itertools.product(*axes.values())]}))
"""


def write_config() -> tuple[Path, int]:
    cudas = []
    for version in known_cuda_releases():
        try:
            if can_compile(version, "sm_80") and can_compile(version, "sm_90"):
                cudas.append(str(version))
        except UnknownVersion:
            continue  # releases without arch data in the knowledge base
    cudas = cudas[-10:]
    variants = [f"v{i}" for i in range(1000 // (len(cudas) * len(PYTHONS)))]
    config = {
        "images": [
            {
                "name": "bench",
                "role": "training",
                "repository": "ghcr.io/acme/bench",
                "axes": {"cuda": cudas, "python": PYTHONS, "variant": variants},
                "build-args": {"PYTHON_VERSION": "{python}", "TORCH_CUDA_ARCH_LIST": "{arch_list}"},
                "tags": ["cu{cuda|nodot}-py{python}-{variant}"],
                "targets": ["sm_80", "sm_90"],
            }
        ]
    }
    path = WORK / "gpuship.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path, len(cudas) * len(PYTHONS) * len(variants)


def hyperfine(commands: dict[str, str]) -> dict[str, dict[str, float]]:
    export = WORK / "hyperfine.json"
    argv = ["hyperfine", "--warmup", "2", "--runs", "10", "--export-json", str(export)]
    for name, command in commands.items():
        argv += ["--command-name", name, command]
    subprocess.run(argv, check=True, cwd=WORK)
    results = json.loads(export.read_text())["results"]
    return {
        r["command"]: {"wall_mean_s": r["mean"], "cpu_mean_s": r["user"] + r["system"]}
        for r in results
    }


def main() -> None:
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    path, expected = write_config()
    loaded = load_config(path, {}).config
    image = loaded.images[0]
    targets = image_targets(image, WORK)
    timings = []
    for _ in range(5):
        start = time.perf_counter()
        plan = plan_image(image, targets, {})
        timings.append(time.perf_counter() - start)
    assert len(plan.cells) == expected and not plan.invalid, (len(plan.cells), plan.invalid[:1])
    # What a user would otherwise script: the bare product, no knowledge base, no checks.
    (WORK / "axes.json").write_text(
        json.dumps({k: list(map(str, v)) for k, v in image.axes.items()})
    )
    (WORK / "naive.py").write_text(NAIVE)
    naive = f"{sys.executable} {WORK / 'naive.py'} {WORK / 'axes.json'}"
    means = hyperfine(
        {
            "gpuship matrix (1000 cells)": f"{GPUSHIP} --config {path} matrix --format json",
            "python itertools.product (no validation)": naive,
        }
    )
    summary = {
        "cells": expected,
        "plan_image_best_s": min(timings),
        "load_average_1m": os.getloadavg()[0],
        **means,
    }
    (WORK / "summary.json").write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
