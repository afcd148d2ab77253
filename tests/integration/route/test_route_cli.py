"""`gpuship route` end to end: a multi-runner inventory in the real registry (an old-driver
pool, a split pool, an arm64 pool, a MIG pool) and images pushed with gpuship's labels."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from bed import hosts
from bed.fleet import Runner, publish_fleet
from bed.oci import make_image, push
from bed.registry import Registry
from json_results import check_output

HostEnv = Callable[[Mapping[str, Any]], dict[str, str]]
CDI_SPEC = Path(__file__).resolve().parents[2] / "data" / "cdi" / "nvidia-550.54.15.yaml"
CONFIG = """
verify:
  require-gpu-runtime: false     # the bed has no NVIDIA container runtime
  minor-version-compat: error    # a pool must run the image's CUDA natively
route:
  max-audit-age: 24h
"""
FLEET = (
    Runner("t4-1", ("gpu-t4",), hosts.T4_470),
    Runner("a100-1", ("gpu-a100",), hosts.A100_550),
    Runner("a100-2", ("gpu-a100",), hosts.A100_535),
    Runner("h100-1", ("gpu-h100",), hosts.H100_570),
    Runner("h100-2", ("gpu-h100",), hosts.H100_570),
    Runner("gh200-1", ("gpu-gh200",), hosts.H100_570, machine="aarch64"),
    Runner("mig-1", ("gpu-a100-mig",), hosts.A100_MIG_550),
)


def labelled(registry: Registry, name: str, cuda: str, arch: str) -> str:
    image = make_image(
        [{"app/run.py": b"print('gpu')\n"}],
        labels={"io.gpuship.cuda": cuda, "io.gpuship.arch-list": arch, "io.gpuship.cell": name},
    )
    digest = push(registry.url, f"route/cli/{name}", image, tag="candidate")
    return f"{registry.host}/route/cli/{name}@{digest}"


@pytest.fixture(scope="module")
def fleet(registry: Registry, nvml_host: HostEnv, tmp_path_factory: pytest.TempPathFactory) -> str:
    publish_fleet(registry.host, "route/cli/fleet", FLEET, nvml_host, tmp_path_factory.mktemp("a"))
    return f"{registry.host}/route/cli/fleet"


def route(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    (cwd / "gpuship.yaml").write_text(CONFIG)
    done = subprocess.run(
        [sys.executable, "-m", "gpuship", "route", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    check_output(args, done.stdout)
    return done


def test_route_gives_the_pools_and_refuses_the_impossible(
    fleet: str, registry: Registry, tmp_path: Path
) -> None:
    cu124 = labelled(registry, "app-cu124", "12.4", "8.0;9.0")
    cu128 = labelled(registry, "app-cu128-sm90", "12.8", "9.0")
    done = route([cu124, cu128, "--fleet", fleet, "--format", "json"], tmp_path)
    assert done.returncode == 0, done.stderr + done.stdout
    result = json.loads(done.stdout)["result"]
    by_name = {image["name"]: image for image in result["images"]}
    assert by_name["app-cu124"]["runnable_pools"] == ["gpu-h100", "gpu-a100-mig"]
    assert by_name["app-cu124"]["runs_on"] == ["self-hosted", "gpu-h100"]
    split = by_name["app-cu124"]["pools"]["gpu-a100"]
    assert split["split"] is True and "a100-2" in split["reason"]
    # The arm64 pool has H100s on 570, but this image is amd64 only.
    assert "linux/arm64 host" in by_name["app-cu128-sm90"]["pools"]["gpu-gh200"]["reason"]
    assert by_name["app-cu128-sm90"]["runnable_pools"] == ["gpu-h100"]
    assert "driver 470.256.02" in by_name["app-cu124"]["pools"]["gpu-t4"]["reason"]

    impossible = labelled(registry, "app-sm100", "12.8", "10.0")
    refused = route([cu124, impossible, "--fleet", fleet], tmp_path)
    assert refused.returncode == 1
    assert "app-sm100 runs on no pool" in refused.stdout
    assert "sm_90 has neither SASS nor PTX" in refused.stdout  # the reason verify gives


def test_route_k8s_output_for_the_same_images(
    fleet: str, registry: Registry, tmp_path: Path
) -> None:
    cu124 = labelled(registry, "app-k8s", "12.4", "8.0;9.0")
    done = route(
        [cu124, "--fleet", fleet, "--format", "k8s", "--toleration", "nvidia.com/gpu:NoSchedule"],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    documents = list(yaml.safe_load_all(done.stdout))
    assert len(documents) == 1, done.stdout
    (fragment,) = documents
    terms = fragment["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    keys = {r["key"] for term in terms["nodeSelectorTerms"] for r in term["matchExpressions"]}
    assert "nvidia.com/cuda.driver-version.major" in keys and "nvidia.com/gpu.compute.major" in keys
    assert fragment["tolerations"][0]["key"] == "nvidia.com/gpu"


def test_verify_fails_on_a_cdi_spec_left_from_the_previous_driver(
    nvml_host: HostEnv, tmp_path: Path
) -> None:
    # The driver was updated to 570 and the host rebooted; /etc/cdi still has the 550 spec.
    cdi = tmp_path / "cdi"
    cdi.mkdir()
    shutil.copy(CDI_SPEC, cdi / "nvidia.yaml")
    (tmp_path / "gpuship.yaml").write_text(
        f"verify:\n  require-gpu-runtime: false\n  cdi-spec-dirs: [{cdi}]\n"
        f"  systemd-unit-dirs: [{tmp_path / 'no-units'}]\n"
    )
    env = {**nvml_host(hosts.H100_570), "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    done = subprocess.run(
        [sys.executable, "-m", "gpuship", "verify", "--format", "json"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    stale, unrefreshed = sorted(
        (f for f in report["findings"] if f["rule"] == "GSV106"), key=lambda f: f["severity"]
    )
    assert (stale["severity"], unrefreshed["severity"]) == ("error", "warning")
    assert "nothing regenerates" in unrefreshed["message"]
    assert "generated for driver 550.54.15 but driver 570.195.03 is loaded" in stale["message"]
    assert f"nvidia-ctk cdi generate --output={cdi / 'nvidia.yaml'}" in stale["fix"]


IMAGE_MAP_CONFIG = """
images:
  - name: trainer
    role: training
    repository: registry.example/ml/trainer
    base-image: "registry.example/base/cuda:{cuda}-runtime"
    axes:
      cuda: ["12.4", "12.6"]
    tags: ["cu{cuda|nodot}"]
    targets: [sm_80, sm_90]
"""


def test_image_map_shows_the_pools_each_cell_can_run_on(fleet: str, tmp_path: Path) -> None:
    (tmp_path / "gpuship.yaml").write_text(IMAGE_MAP_CONFIG + CONFIG)
    digest = "sha256:" + "ab" * 32
    (tmp_path / "gpuship.lock").write_text(
        "version: 1\nbases:\n"
        + "".join(
            f'  "registry.example/base/cuda:{v}-runtime": "{digest}"\n' for v in ("12.4", "12.6")
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "gpuship", "docs", "--image-map", "--fleet", fleet],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "runs on pools |" in done.stdout
    rows = {
        line.split("|")[1].strip(): line for line in done.stdout.splitlines() if "`trainer-" in line
    }
    cu124 = next(row for cell, row in rows.items() if "12.4" in cell)
    cu126 = next(row for cell, row in rows.items() if "12.6" in cell)
    assert cu124.rstrip().endswith("`gpu-h100`, `gpu-a100-mig` |")
    assert cu126.rstrip().endswith("`gpu-h100` |")
