"""Benchmark: `gpuship route` over 50 runners x 50 images, from a fleet inventory in a real
registry, beside `gpuship fleet` over the same 50 audits as local files (what a workflow did
before the inventory: GPU jobs upload audits as artifacts, a CPU job downloads and merges them).

The inventory is the test bed's `docker-registry` on 127.0.0.1 holding 50 entries (10 pools of
5 runners: drivers 470-580, T4/A100/H100/L4/H200, one pool of MIG A100s, one arm64 pool),
made from the real H200 audit in tests/data/gpu-readings. The matrix has 50 cells (CUDA
11.8-13.0 x arch lists). hyperfine times whole processes (start-up included), 20 runs each
after 3 warm-ups; valgrind counts one run's instructions, which do not vary with the load of
a shared machine. Usage: bench/route/run.sh [--tls [--proxy]] [--action PYTHON] (it compiles
the modules first, see bench/compiled.sh); --tls keeps the inventory on a registry serving
HTTPS instead, --proxy reaches it through a CONNECT proxy (HTTPS_PROXY);
--action runs gpuship as the actions install it (actions/_setup/setup.sh: a venv holding only
requirements/action.txt, built with PYTHON, e.g. the python3 of the runner image) instead of
the test venv.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from bed.pki import CertificateAuthority  # noqa: E402
from bed.registry import run_registry  # noqa: E402
from bed.tunnel import PROXY_VARIABLES, tunnelling_proxy  # noqa: E402
from gpuship.compat.audit import audit_from_document  # noqa: E402
from gpuship.registry.client import RegistryClient  # noqa: E402
from gpuship.reference import parse_repository  # noqa: E402
from gpuship.registry.tls import BUNDLE_VARS  # noqa: E402
from gpuship.route.inventory import publish_audit  # noqa: E402

TEMPLATE = ROOT / "tests" / "data" / "gpu-readings" / "NVIDIA-H200-580.159.04.audit.json"
TEST_VENV_GPUSHIP = str(Path(sys.executable).parent / "gpuship")
# (pool, driver, CUDA of the driver, GPU name, compute capability, GiB, machine, MIG slices)
POOLS = [
    ("gpu-t4", "470.256.02", "11.4", "Tesla T4", "7.5", 15, "x86_64", 0),
    ("gpu-a100-525", "525.147.05", "12.0", "NVIDIA A100-SXM4-80GB", "8.0", 80, "x86_64", 0),
    ("gpu-a100-535", "535.230.02", "12.2", "NVIDIA A100-SXM4-80GB", "8.0", 80, "x86_64", 0),
    ("gpu-a100-550", "550.144.03", "12.4", "NVIDIA A100-SXM4-80GB", "8.0", 80, "x86_64", 0),
    ("gpu-l4", "550.144.03", "12.4", "NVIDIA L4", "8.9", 22, "x86_64", 0),
    ("gpu-h100", "570.195.03", "12.8", "NVIDIA H100 80GB HBM3", "9.0", 80, "x86_64", 0),
    ("gpu-h200", "580.95.05", "13.0", "NVIDIA H200", "9.0", 140, "x86_64", 0),
    ("gpu-a100-mig", "570.195.03", "12.8", "NVIDIA A100-SXM4-80GB", "8.0", 80, "x86_64", 2),
    ("gpu-gh200", "570.195.03", "12.8", "NVIDIA GH200 480GB", "9.0", 96, "aarch64", 0),
    ("gpu-mixed", "550.144.03", "12.4", "NVIDIA H100 80GB HBM3", "9.0", 80, "x86_64", 0),
]
CUDAS = ["11.8", "12.1", "12.4", "12.6", "12.8", "13.0", "12.2", "12.5", "12.3", "12.0"]
ARCHS = ["8.0;9.0", "7.5;8.0;8.9", "8.0+PTX", "9.0", "8.9;9.0"]


def audits() -> list[dict]:
    template = json.loads(TEMPLATE.read_text())
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    made = []
    for pool, driver, cuda, name, cc, gib, machine, slices in POOLS:
        for n in range(5):
            doc = json.loads(json.dumps(template))
            doc["taken_at"] = now
            doc["runner"] = {
                "hostname": f"{pool}-{n}",
                "runner_name": f"{pool}-{n}",
                "labels": [pool],
            }
            doc["system"]["machine"] = machine
            doc["nvml"]["driver_version"] = driver
            doc["nvml"]["cuda_driver_version"] = cuda
            gpu = doc["nvml"]["gpus"][0]
            gpu.update(name=name, compute_capability=cc, memory_total_bytes=gib * 2**30)
            # What differs between real hosts of one pool: each GPU's identity, its free
            # memory at audit time, a kernel update here and there.
            serial = zlib.crc32(f"{pool}-{n}".encode())
            gpu["uuid"] = f"GPU-{serial:08x}-4a9d-9380-ca61-{n:012x}"
            gpu["pci_bus_id"] = f"00000000:{(serial % 200) + 16:02X}:00.0"
            gpu["memory_free_bytes"] = gib * 2**30 - (serial % 4096) * 2**20
            doc["system"]["kernel"] = f"6.8.0-{40 + serial % 11}-generic"
            if slices:
                gpu["mig_enabled"] = True
                gpu["mig_devices"] = [
                    {"index": i, "uuid": f"MIG-{pool}-{n}-{i}", "memory_total_bytes": 40 * 2**30}
                    for i in range(slices)
                ]
            if pool == "gpu-mixed" and n == 4:  # one host on an older driver: a split pool
                doc["nvml"]["driver_version"], doc["nvml"]["cuda_driver_version"] = (
                    "535.230.02",
                    "12.2",
                )
            made.append(doc)
    return made


def matrix() -> dict:
    cells = [
        {"id": f"app-cu{cuda}-{i}", "cuda": cuda, "arch_list": arch, "repository": "reg/app",
         "tags": [f"cu{cuda}-{i}"], "platforms": ["linux/amd64"]}
        for cuda in CUDAS
        for i, arch in enumerate(ARCHS)
    ]  # fmt: skip
    return {"include": cells}


def action_gpuship(work: Path, python: str) -> str:
    """The `gpuship` command the actions' setup step writes: a wrapper running this checkout
    with a venv of requirements/action.txt built by `python` (as on a runner, from bytecode)."""
    environ = dict(os.environ, GPUSHIP_PYTHON=python, RUNNER_TOOL_CACHE=str(work / "tool-cache"))
    environ.update(RUNNER_TEMP=str(work), GITHUB_OUTPUT=str(work / "setup-outputs"))
    environ.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run(
        ["bash", str(ROOT / "actions" / "_setup" / "setup.sh")],
        env=environ, check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    outputs = dict(line.split("=", 1) for line in (work / "setup-outputs").read_text().splitlines())
    venv_python = outputs["python"]
    subprocess.run(
        [venv_python, "-m", "compileall", "-q", str(ROOT / "src")],
        check=True, env=environ, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    print(subprocess.run([venv_python, "-VV"], capture_output=True, text=True).stdout.strip())
    return outputs["gpuship"]


def instructions(command: str, cwd: Path, environ: dict[str, str]) -> str:
    """Instructions one run executes (valgrind cachegrind): unlike wall time on a shared
    machine, the same from run to run, so it shows what a change saved. The actions' gpuship
    is a bash wrapper that execs Python, so children are traced and the last count (Python's)
    is kept."""
    if shutil.which("valgrind") is None:
        return "unknown (no valgrind)"
    run = subprocess.run(
        "valgrind --tool=cachegrind --cache-sim=no --trace-children=yes "
        f"--cachegrind-out-file=/dev/null {command}",
        shell=True, cwd=cwd, capture_output=True, text=True, timeout=600, env=environ,
    )  # fmt: skip
    refs = [line for line in run.stderr.splitlines() if "I refs:" in line or "I   refs:" in line]
    if not refs:
        return "unknown (valgrind printed no count)"
    count = int(refs[-1].split(":")[1].replace(",", "").strip())
    return f"{count / 1e6:,.0f} M"


@contextlib.contextmanager
def inventory_registry(work: Path, tls: bool, proxy: bool) -> Iterator[tuple[str, dict[str, str]]]:
    """(where the inventory goes, the environment that reaches it): the bed's plain-HTTP
    registry, or with --tls one serving HTTPS itself (a certificate from a throwaway CA, given
    to gpuship as certs.d; basic auth) with no CA bundle variable set, so the client also loads
    the default CAs as it would for ghcr.io; --proxy adds a corporate-style proxy in front
    (HTTPS_PROXY naming the bed's CONNECT-only proxy)."""
    if not tls:
        with run_registry(work / "registry") as registry:
            yield f"{registry.host}/bench/fleet", dict(os.environ)
        return
    ca = CertificateAuthority(work / "ca")
    with contextlib.ExitStack() as stack:
        registry = stack.enter_context(run_registry(work / "tls", "bench", "secret", tls=ca))
        certs = ca.trusted_in(work / "certs.d", registry.host)
        environ = {k: v for k, v in os.environ.items() if k not in BUNDLE_VARS + PROXY_VARIABLES}
        environ |= registry.credential_env() | {
            "GPUSHIP_CERTS_DIR": str(certs),
            "DOCKER_CONFIG": str(work / "no-docker-config"),
        }
        if proxy:
            environ["HTTPS_PROXY"], _ = stack.enter_context(tunnelling_proxy())
        yield f"{registry.host}/bench/fleet", environ


def main(tls: bool, proxy: bool, action_python: str | None) -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-route-"))
    try:
        gpuship = action_gpuship(work, action_python) if action_python else TEST_VENV_GPUSHIP
        with inventory_registry(work, tls, proxy) as (fleet, environ):
            folder = work / "audits"
            folder.mkdir()
            with RegistryClient(environ=environ) as client:
                for doc in audits():
                    audit = audit_from_document(doc, "bench")
                    publish_audit(client, parse_repository(fleet), audit, None)
                    (folder / f"{audit.runner.runner_name}.json").write_text(json.dumps(doc))
            (work / "matrix.json").write_text(json.dumps(matrix()))
            (work / "gpuship.yaml").write_text("verify:\n  require-gpu-runtime: false\n")
            route = f"{gpuship} route --matrix matrix.json --fleet {fleet} --format json"
            fleet_cmd = f"{gpuship} fleet audits --matrix matrix.json --format json"
            check = subprocess.run(
                route, shell=True, cwd=work, capture_output=True, text=True, env=environ
            )
            result = json.loads(check.stdout)["result"]
            print(
                f"route: exit {check.returncode}, {len(result['images'])} images, "
                f"{len(result['pools'])} pools, unroutable {len(result['unroutable'])}"
            )
            subprocess.run(
                ["hyperfine", "--warmup", "3", "--runs", "20", "-i", "--export-markdown",
                 str(work / "hyperfine.md"), "-n", "gpuship route (registry inventory)", route,
                 "-n", "gpuship fleet (audit files)", fleet_cmd],
                cwd=work, check=True, env=environ,
            )  # fmt: skip
            print((work / "hyperfine.md").read_text())
            for name, command in (("route", route), ("fleet", fleet_cmd)):
                print(f"instructions, gpuship {name}: {instructions(command, work, environ)}")
            print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    finally:
        shutil.rmtree(work, ignore_errors=True)


USAGE = "usage: bench/route/run.sh [--tls [--proxy]] [--action PYTHON]"


def arguments() -> tuple[bool, bool, str | None]:
    args = sys.argv[1:]
    tls, proxy = "--tls" in args, "--proxy" in args
    if proxy and not tls:
        sys.exit(f"{USAGE} (--proxy tunnels HTTPS)")
    if "--action" not in args:
        return tls, proxy, None
    at = args.index("--action") + 1
    if at >= len(args):
        sys.exit(USAGE)
    return tls, proxy, args[at]


if __name__ == "__main__":
    main(*arguments())
