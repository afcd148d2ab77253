"""`gpuship audit` / `verify` end to end: a subprocess whose real pynvml reads a described host
(the NVML stand-in), the real Debian libnvidia-ml, the bed's Docker engine and CDI spec files."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from verify_cli import NO_DOCKER, HostEnv, gpuship

from bed import hosts
from bed.docker_engine import DockerEngine
from bed.images import build_scratch_image
from gpuship.compat.audit import SCHEMA_PATH

pytestmark = pytest.mark.integration

CDI_SPEC = "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n  - name: all\n"


@pytest.mark.parametrize("name", ["t4-470", "a100-mig-550", "h200-580", "a100-t4-535"])
def test_audit_writes_a_schema_valid_document(
    nvml_host: HostEnv, tmp_path: Path, name: str
) -> None:
    description = hosts.HOSTS[name]
    env = nvml_host(description) | NO_DOCKER
    out = tmp_path / "audit.json"
    done = gpuship(["audit", "--label", name, "--json-file", str(out)], env, tmp_path)
    assert done.returncode == 0, done.stderr
    document = json.loads(out.read_text())
    jsonschema.validate(document, json.loads(SCHEMA_PATH.read_text()))
    assert document["schema_version"] == 3
    assert document["runner"]["labels"] == [name]
    assert document["nvml"]["driver_version"] == description["driver_version"]
    assert [g["uuid"] for g in document["nvml"]["gpus"]] == [g["uuid"] for g in description["gpus"]]
    assert document["container"]["docker"]["reachable"] is False
    assert description["driver_version"] in done.stdout  # the human view names the driver


def test_audit_json_format_carries_the_document_as_result(
    nvml_host: HostEnv, tmp_path: Path
) -> None:
    env = nvml_host(hosts.L4_550) | NO_DOCKER
    done = gpuship(["--format", "json", "audit"], env, tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["command"] == "audit"
    assert report["result"]["nvml"]["gpus"][0]["name"] == "NVIDIA L4"
    assert report["result"]["nvml"]["cuda_driver_version"] == "12.4"


def test_audit_markdown_has_the_gpu_table(nvml_host: HostEnv, tmp_path: Path) -> None:
    env = nvml_host(hosts.A100_MIG_550) | NO_DOCKER
    done = gpuship(["--format", "markdown", "audit"], env, tmp_path)
    assert done.returncode == 0, done.stderr
    assert "NVIDIA A100-SXM4-80GB" in done.stdout
    assert "on (2 devices)" in done.stdout
    assert "|" in done.stdout


@pytest.mark.parametrize(
    ("description", "expected"),
    [
        (hosts.NO_PERMISSION, "insufficient permissions"),
        (hosts.NO_GPU_550, "no GPU visible"),
        (hosts.DRIVER_MISMATCH, "version mismatch"),
    ],
)
def test_host_problems_exit_3_with_one_line(
    nvml_host: HostEnv, tmp_path: Path, description: Mapping[str, Any], expected: str
) -> None:
    done = gpuship(["audit"], nvml_host(description) | NO_DOCKER, tmp_path)
    assert done.returncode == 3
    assert expected in done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_real_libnvidia_ml_without_a_driver_is_driver_not_loaded(
    real_nvml_env: dict[str, str], tmp_path: Path
) -> None:
    done = gpuship(["verify"], real_nvml_env | NO_DOCKER, tmp_path)
    assert done.returncode == 3
    assert "NVIDIA driver not loaded" in done.stderr
    assert "Traceback" not in done.stderr


def test_no_nvml_library_at_all(real_nvml_env: dict[str, str], tmp_path: Path) -> None:
    # Hide the real libnvidia-ml.so.1 in a private mount namespace (needs root + unshare).
    library = Path("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1")
    if shutil.which("unshare") is None or not library.exists():
        pytest.skip("needs unshare and the Debian libnvidia-ml1 path")
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip("unshare -m not permitted here")
    script = f"mount --bind /dev/null {library} && exec {sys.executable} -m gpuship audit"
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", script],
        env=real_nvml_env | NO_DOCKER,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 3
    assert "no NVML library" in done.stderr


def test_verify_reads_the_docker_engine_and_fails_without_gpu_runtime(
    nvml_host: HostEnv, docker_engine: DockerEngine, tmp_path: Path
) -> None:
    env = nvml_host(hosts.A100_550) | docker_engine.env
    done = gpuship(["--format", "json", "verify"], env, tmp_path)
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)["result"]
    runtime = next(c for c in result["checks"] if c["rule"] == "GSV101")
    assert runtime["status"] == "fail"
    assert "runc" in runtime["message"]
    assert "nvidia-ctk" in runtime["fix"]


def test_cdi_spec_gives_containers_the_gpus(
    nvml_host: HostEnv, docker_engine: DockerEngine, tmp_path: Path
) -> None:
    cdi = tmp_path / "cdi"
    cdi.mkdir()
    (cdi / "nvidia.yaml").write_text(CDI_SPEC)
    (tmp_path / "gpuship.yaml").write_text(
        f"verify:\n  cdi-spec-dirs: [{cdi}]\n  gpus: 1\n  min-memory-gib: 40\n"
    )
    env = nvml_host(hosts.A100_550) | docker_engine.env
    done = gpuship(["--format", "json", "verify"], env, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout)["result"]
    # The bed's dockerd 20.10 predates CDI: the spec is seen, and so is that Docker ignores it.
    assert result["verdict"] == "warn"
    runtime = next(c for c in result["checks"] if c["rule"] == "GSV101")
    assert runtime["status"] == "warn"
    assert "nvidia.com/gpu=all" in runtime["message"]
    assert "does not use CDI" in runtime["message"]
    # the same host fails a job that needs more memory than the A100 has (flag over config)
    bigger = gpuship(["verify", "--min-memory-gib", "96"], env, tmp_path)
    assert bigger.returncode == 1
    assert "80.0 GiB" in bigger.stdout


def test_verify_judges_a_saved_audit_of_another_host(nvml_host: HostEnv, tmp_path: Path) -> None:
    saved = tmp_path / "mig.json"
    env = nvml_host(hosts.A100_MIG_550) | NO_DOCKER
    assert gpuship(["audit", "--json-file", str(saved)], env, tmp_path).returncode == 0
    (tmp_path / "gpuship.yaml").write_text("verify:\n  mig: forbid\n  require-gpu-runtime: false\n")
    done = gpuship(["--format", "json", "verify", "--audit", str(saved)], {**env}, tmp_path)
    assert done.returncode == 1
    result = json.loads(done.stdout)["result"]
    assert any(c["rule"] == "GSV103" and c["status"] == "fail" for c in result["checks"])


def test_smoke_without_image_is_a_usage_error(nvml_host: HostEnv, tmp_path: Path) -> None:
    done = gpuship(["verify", "--smoke"], nvml_host(hosts.A100_550) | NO_DOCKER, tmp_path)
    assert done.returncode == 2
    assert "--smoke needs an IMAGE" in done.stderr


def test_smoke_on_a_host_without_gpu_runtime_fails_with_dockers_reason(
    nvml_host: HostEnv, docker_engine: DockerEngine, tmp_path: Path
) -> None:
    # The only --smoke path a CPU machine can exercise: the engine has no NVIDIA device
    # driver, so the GPU request is refused. Passing probes need a GPU runner.
    build_scratch_image(docker_engine, "verify/smoke:1", [{"etc/hostname": b"smoke\n"}])
    (tmp_path / "gpuship.yaml").write_text("verify:\n  require-gpu-runtime: false\n")
    env = nvml_host(hosts.A100_550) | docker_engine.env
    done = gpuship(
        ["--format", "json", "verify", "docker://verify/smoke:1", "--smoke"], env, tmp_path
    )
    assert done.returncode == 1, done.stderr
    result = json.loads(done.stdout)["result"]
    smoke = next(c for c in result["checks"] if c["rule"] == "GSV301")
    assert smoke["status"] == "fail"
    assert "could not select device driver" in smoke["message"]
    assert "nvidia-ctk" in smoke["fix"]


def test_audit_sets_the_json_file_output_it_wrote(nvml_host: HostEnv, tmp_path: Path) -> None:
    # actions/audit used to set `json-file` itself; gpuship does, when it wrote the file.
    outputs = tmp_path / "outputs"
    env = nvml_host(hosts.A100_550) | NO_DOCKER | {"GITHUB_ACTIONS": "true"}
    done = gpuship(
        ["audit", "--json-file", "audit.json"], env | {"GITHUB_OUTPUT": str(outputs)}, tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert "json-file=audit.json" in outputs.read_text().splitlines()
    assert json.loads((tmp_path / "audit.json").read_text())["schema_version"] == 3
