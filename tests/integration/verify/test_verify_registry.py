"""`gpuship verify` / `fleet` with image needs read from the real registry (no pull): stock
nvidia/cuda requirement values, build-stage labels, and a real nvcc-built library (--deep)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from verify_cli import NO_DOCKER, HostEnv, gpuship

from bed import faults, hosts
from bed.nvcc import build_gpu_library
from bed.oci import make_image, push
from bed.registry import Registry
from unit.compat.require_values import IMAGES

pytestmark = pytest.mark.integration

# Hosts have no container runtime here; that check has its own tests (test_verify_cli).
CONFIG = "verify:\n  require-gpu-runtime: false\n"


@pytest.fixture(scope="module")
def sm80_library(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """A shared library with SASS for sm_80 only, built by the real nvcc."""
    directory = tmp_path_factory.mktemp("nvcc")
    return build_gpu_library(directory, ("arch=compute_80,code=sm_80",)).read_bytes()


@pytest.fixture(scope="module")
def images(registry: Registry, sm80_library: bytes) -> dict[str, str]:
    """Reference per image key, pushed once: stock env values, a labelled and a deep image."""
    refs = {}
    for key, env in IMAGES.items():
        image = make_image([{"etc/image-key": key.encode()}], env=env)
        push(registry.url, "verify/cuda", image, tag=key)
        refs[key] = registry.ref("verify/cuda", key)
    labelled = make_image(
        [{"etc/app": b"app"}],
        env={"CUDA_VERSION": "12.4.1"},
        labels={"io.gpuship.cuda": "12.4", "io.gpuship.arch-list": "8.0;9.0"},
    )
    push(registry.url, "verify/app", labelled, tag="labelled")
    refs["labelled"] = registry.ref("verify/app", "labelled")
    deep = make_image([{"usr/local/lib/libk.so": sm80_library}], env={"CUDA_VERSION": "12.4.1"})
    push(registry.url, "verify/app", deep, tag="deep")
    refs["deep"] = registry.ref("verify/app", "deep")
    return refs


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "gpuship.yaml").write_text(CONFIG)
    return tmp_path


def verify(
    ref: str, host: Mapping[str, Any], nvml_host: HostEnv, cwd: Path, *extra: str
) -> tuple[int, dict[str, Any]]:
    done = gpuship(["--format", "json", "verify", ref, *extra], nvml_host(host) | NO_DOCKER, cwd)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)["result"]


def check(result: Mapping[str, Any], rule: str) -> list[dict[str, Any]]:
    return [c for c in result["checks"] if c["rule"] == rule]


@pytest.mark.parametrize(
    ("key", "host", "verdict"),
    [
        ("12.4.1", hosts.A100_550, "ok"),
        ("12.4.1", hosts.A100_535, "warn"),  # minor-version compatibility
        ("12.4.1", hosts.T4_470, "ok"),  # forward compatibility on a datacenter GPU
        ("12.8", hosts.A100_525, "fail"),  # no 525 branch in the requirement
        ("12.6.3", hosts.RTX4090_550, "fail"),  # GeForce dropped from 12.6 compat terms
        ("13.0", hosts.H200_580, "ok"),
        ("13.0", hosts.RTX4090_550, "fail"),  # GeForce cannot use forward compat
        ("11.8", hosts.T4_470, "warn"),
    ],
)
def test_verdict_for_stock_requirement_values(
    images: dict[str, str],
    nvml_host: HostEnv,
    workdir: Path,
    key: str,
    host: Mapping[str, Any],
    verdict: str,
) -> None:
    code, result = verify(images[key], host, nvml_host, workdir)
    assert result["verdict"] == verdict
    assert code == (1 if verdict == "fail" else 0)
    assert result["image"]["require"]["NVIDIA_REQUIRE_CUDA"] == IMAGES[key]["NVIDIA_REQUIRE_CUDA"]


def test_failing_requirement_reports_nvidia_container_cli_message(
    images: dict[str, str], nvml_host: HostEnv, workdir: Path
) -> None:
    _, result = verify(images["12.8"], hosts.A100_525, nvml_host, workdir)
    [require] = check(result, "GSV201")
    assert require["status"] == "fail"
    assert (
        "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.8"
        in require["message"]
    )
    assert "570." in require["fix"]


def test_labels_drive_arch_coverage(
    images: dict[str, str], nvml_host: HostEnv, workdir: Path
) -> None:
    _, on_t4 = verify(images["labelled"], hosts.T4_470, nvml_host, workdir)
    [arch] = check(on_t4, "GSV203")
    assert arch["status"] == "fail"
    assert "no kernel image is available" in arch["message"]
    _, on_h100 = verify(images["labelled"], hosts.H100_570, nvml_host, workdir)
    assert check(on_h100, "GSV203")[0]["status"] == "ok"


def test_deep_scan_reads_architectures_of_a_real_nvcc_library(
    images: dict[str, str], nvml_host: HostEnv, workdir: Path
) -> None:
    _, shallow = verify(images["deep"], hosts.T4_470, nvml_host, workdir)
    assert check(shallow, "GSV203")[0]["status"] == "skip"
    _, on_t4 = verify(images["deep"], hosts.T4_470, nvml_host, workdir, "--deep")
    assert check(on_t4, "GSV203")[0]["status"] == "fail"
    assert on_t4["image"]["arch_source"] == "image scan (--deep)"
    assert "sm_80" in on_t4["image"]["arch_list"]
    _, on_a100 = verify(images["deep"], hosts.A100_550, nvml_host, workdir, "--deep")
    assert check(on_a100, "GSV203")[0]["status"] == "ok"


@pytest.mark.parametrize(("key", "layers_read"), [("deep", True), ("labelled", False)])
def test_deep_reads_the_manifest_and_config_once(
    images: dict[str, str],
    registry: Registry,
    nvml_host: HostEnv,
    workdir: Path,
    key: str,
    layers_read: bool,
) -> None:
    # The labels decide after one config read: layers follow only when the labels lack the CUDA
    # or the arch list, from the same resolved manifest (no second manifest and config fetch).
    with faults.start(registry.host, {}) as proxy:
        ref = images[key].replace(registry.host, proxy.host, 1)
        _, result = verify(ref, hosts.A100_550, nvml_host, workdir, "--deep")
    gets = Counter(r.path for r in proxy.log if r.method == "GET")
    manifests = [path for path in gets if "/manifests/" in path]
    blobs = [path for path in gets if "/blobs/" in path]
    assert [gets[path] for path in manifests] == [1], proxy.log
    assert all(gets[path] == 1 for path in blobs), proxy.log
    assert len(blobs) == (2 if layers_read else 1)  # the config, then the one layer
    scanned = result["image"]["arch_source"] == "image scan (--deep)"
    assert scanned is layers_read


def test_fleet_merges_audits_with_registry_images(
    images: dict[str, str], nvml_host: HostEnv, workdir: Path
) -> None:
    audits = []
    for name in ("t4-470", "a100-535", "rtx4090-550", "h200-580"):
        path = workdir / f"{name}.json"
        done = gpuship(
            ["audit", "--label", name, "--json-file", str(path)],
            nvml_host(hosts.HOSTS[name]) | NO_DOCKER,
            workdir,
        )
        assert done.returncode == 0, done.stderr
        audits.append(str(path))
    args = [
        "--format",
        "json",
        "fleet",
        *audits,
        "--image",
        images["13.0"],
        "--image",
        images["labelled"],
    ]
    done = gpuship(args, NO_DOCKER, workdir)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)["result"]
    assert result["runners"] == ["t4-470", "a100-535", "rtx4090-550", "h200-580"]
    # 13.0 lists no 470 branch for forward compat; GeForce cannot use it at all
    assert result["exclude"][images["13.0"]] == ["t4-470", "rtx4090-550"]
    # labelled: T4 has no sm_75 kernels; on 535 (CUDA 12.2) the legacy CUDA_VERSION=12.4.1
    # implies cuda>=12.4, which the runtime enforces; sm_80 SASS runs on the 4090's 8.9
    assert result["exclude"][images["labelled"]] == ["t4-470", "a100-535"]
    assert result["unrunnable_images"] == []
    assert result["oldest_driver"] == hosts.T4_470["driver_version"]
    markdown = gpuship(
        ["--format", "markdown", "fleet", *audits, "--image", images["13.0"]], NO_DOCKER, workdir
    )
    assert "rtx4090-550" in markdown.stdout
    assert "FAIL" in markdown.stdout


def test_private_registry_needs_credentials_from_the_environment(
    registry_basic_auth: Registry, nvml_host: HostEnv, workdir: Path
) -> None:
    image = make_image([{"etc/k": b"private"}], env=IMAGES["12.4.1"])
    push(registry_basic_auth.url, "verify/private", image, tag="1", auth=registry_basic_auth.auth)
    ref = registry_basic_auth.ref("verify/private", "1")
    env = nvml_host(hosts.A100_550) | NO_DOCKER
    denied = gpuship(["verify", ref], env, workdir)
    assert denied.returncode == 2
    assert registry_basic_auth.host in denied.stderr
    assert registry_basic_auth.password not in denied.stderr + denied.stdout
    credentials = registry_basic_auth.credential_env()
    allowed = gpuship(["--format", "json", "verify", ref], env | credentials, workdir)
    assert allowed.returncode == 0, allowed.stderr
    assert json.loads(allowed.stdout)["result"]["verdict"] == "ok"


def test_unreachable_registry_is_exit_3(nvml_host: HostEnv, workdir: Path) -> None:
    done = gpuship(
        ["verify", "127.0.0.1:9/verify/none:1"], nvml_host(hosts.A100_550) | NO_DOCKER, workdir
    )
    assert done.returncode == 3
    assert "127.0.0.1:9" in done.stderr
    assert "Traceback" not in done.stderr
