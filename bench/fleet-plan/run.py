"""Benchmark: `gpuship fleet plan` over 200 hosts x 100 images with one change (one pool's
driver), beside `gpuship fleet` over the same 200 audit files and 100 matrix cells: the grid a
user would otherwise recompute by hand-editing the audits and running `fleet` again.

The audits are made from the real H200 audit in tests/data/gpu-readings: 20 pools of 10 hosts
(drivers 470-580; T4, A100, L4, H100, H200, V100), each host differing as real hosts of a pool
do (hostname, GPU UUID). The matrix has 100 cells (10 CUDA releases x 10 arch lists). The
change: `--driver gpu-a100-550-a=570.195.03` (one pool of 10 hosts to the 570 branch).
hyperfine times whole processes (start-up included), RUNS runs after 3 warm-ups, and the whole
comparison is repeated REPEATS times for the spread of a shared machine.
Usage: bench/fleet-plan/run.sh [RUNS [REPEATS]] (it compiles the modules first).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import zlib
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "tests" / "data" / "gpu-readings" / "NVIDIA-H200-580.159.04.audit.json"
GPUSHIP = str(Path(sys.executable).parent / "gpuship")
# (pool stem, driver, CUDA of the driver, GPU name, compute capability, GiB)
KINDS = [
    ("gpu-t4-470", "470.256.02", "11.4", "Tesla T4", "7.5", 15),
    ("gpu-a100-535", "535.230.02", "12.2", "NVIDIA A100-SXM4-80GB", "8.0", 80),
    ("gpu-a100-550", "550.144.03", "12.4", "NVIDIA A100-SXM4-80GB", "8.0", 80),
    ("gpu-l4-550", "550.144.03", "12.4", "NVIDIA L4", "8.9", 22),
    ("gpu-h100-570", "570.195.03", "12.8", "NVIDIA H100 80GB HBM3", "9.0", 80),
    ("gpu-h200-580", "580.95.05", "13.0", "NVIDIA H200", "9.0", 140),
    ("gpu-v100-535", "535.230.02", "12.2", "Tesla V100-SXM2-32GB", "7.0", 32),
    ("gpu-a100-570", "570.195.03", "12.8", "NVIDIA A100-SXM4-80GB", "8.0", 80),
    ("gpu-l4-570", "570.195.03", "12.8", "NVIDIA L4", "8.9", 22),
    ("gpu-h100-580", "580.95.05", "13.0", "NVIDIA H100 80GB HBM3", "9.0", 80),
]
CUDAS = ["11.8", "12.1", "12.2", "12.4", "12.6", "12.8", "12.9", "13.0", "12.0", "12.3"]
ARCHS = [
    "8.0;9.0",
    "7.5;8.0;8.9",
    "8.0+PTX",
    "9.0",
    "8.9;9.0",
    "7.0;7.5;8.0",
    "7.5",
    "8.0;8.6;8.9;9.0+PTX",
    "8.6",
    "7.0;8.0;9.0",
]
CHANGE = ["--driver", "gpu-a100-550-a=570.195.03"]


def write_audits(folder: Path) -> None:
    template = json.loads(TEMPLATE.read_text())
    # The template was read on a host without Docker: give every host the NVIDIA runtime, so
    # the grid judges drivers and architectures rather than failing every host on the runtime.
    template["container"]["docker"].update(
        reachable=True,
        error=None,
        server_version="28.2.2",
        runtimes=["nvidia", "runc"],
        default_runtime="runc",
    )
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    for copy in "ab":  # 20 pools of 10 hosts
        for stem, driver, cuda, name, cc, gib in KINDS:
            pool = f"{stem}-{copy}"
            for n in range(10):
                doc = json.loads(json.dumps(template))
                doc["taken_at"] = now
                doc["runner"] = {
                    "hostname": f"{pool}-{n}",
                    "runner_name": f"{pool}-{n}",
                    "labels": [pool],
                }
                doc["nvml"]["driver_version"] = driver
                doc["nvml"]["cuda_driver_version"] = cuda
                gpu = doc["nvml"]["gpus"][0]
                gpu.update(name=name, compute_capability=cc, memory_total_bytes=gib * 2**30)
                serial = zlib.crc32(f"{pool}-{n}".encode())
                gpu["uuid"] = f"GPU-{serial:08x}-4a9d-9380-ca61-{n:012x}"
                doc["nvml"]["gpus"] = [gpu]
                (folder / f"{pool}-{n}.json").write_text(json.dumps(doc))


def write_matrix(path: Path) -> None:
    cells = [
        {
            "id": f"app-cu{cuda.replace('.', '')}-a{a}",
            "image": "app",
            "repository": "registry.example/app",
            "tags": [f"registry.example/app:cu{cuda.replace('.', '')}-a{a}"],
            "cuda": cuda,
            "arch_list": arch,
        }
        for cuda in CUDAS
        for a, arch in enumerate(ARCHS)
    ]
    path.write_text(json.dumps({"include": cells}))


def main(runs: int, repeats: int) -> None:
    with tempfile.TemporaryDirectory(prefix="gpuship-fleet-plan-") as tmp:
        work = Path(tmp)
        (work / "audits").mkdir()
        write_audits(work / "audits")
        write_matrix(work / "matrix.json")
        fleet = f"{GPUSHIP} fleet audits --matrix matrix.json --format json"
        plan = f"{GPUSHIP} fleet plan audits --matrix matrix.json {' '.join(CHANGE)} --format json"
        for command in (fleet, plan):  # both must run: fleet exits 1 when an image runs nowhere
            done = subprocess.run(
                command.split(), check=False, cwd=work, capture_output=True, text=True
            )
            assert done.returncode in (0, 1) and done.stdout.startswith("{"), done.stderr
        for repeat in range(1, repeats + 1):
            export = work / f"hyperfine-{repeat}.json"
            subprocess.run(
                [
                    "hyperfine",
                    "--warmup",
                    "3",
                    "--runs",
                    str(runs),
                    "-i",
                    "-N",
                    "--export-json",
                    str(export),
                    "-n",
                    "fleet",
                    fleet,
                    "-n",
                    "fleet plan",
                    plan,
                ],
                cwd=work,
                check=True,
                env={**os.environ, "PYTHONDONTWRITEBYTECODE": ""},
                stdout=subprocess.DEVNULL,
            )
            results = json.loads(export.read_text())["results"]
            means = {r["command"]: r for r in results}
            line = ", ".join(
                f"{name}: {r['mean']:.3f} s ± {r['stddev']:.3f} ({r['min']:.3f} ... {r['max']:.3f}"
                f", user {r['user']:.3f} s)"
                for name, r in means.items()
            )
            ratio = means["fleet plan"]["mean"] / means["fleet"]["mean"]
            print(f"repeat {repeat}: {line}; plan / fleet = {ratio:.2f}")


if __name__ == "__main__":
    main(
        int(sys.argv[1]) if len(sys.argv) > 1 else 10, int(sys.argv[2]) if len(sys.argv) > 2 else 3
    )
