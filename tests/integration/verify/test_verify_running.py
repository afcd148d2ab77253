"""`gpuship verify --running` and the restart-policy rule on a real Docker engine, with
containers that "have a GPU" as `bed.gpu_service` describes (GPU-less machine: host character
devices under NVIDIA names, the NVML stand-in and a stand-in nvidia-smi in the image, a
stand-in runtime hook so `--gpus` requests are accepted).

The simulated host restart is dockerd stopped (SIGTERM) and started again on the same state.
The daemon-reload is simulated by what it does to a running container under the systemd
cgroup driver: its device cgroup loses the rule for the GPU nodes. This machine has cgroup v1,
so a deny rule in the container's devices controller does exactly that; the container's
processes then get EPERM opening /dev/nvidiactl and NVML fails with "Unknown Error".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from verify_cli import HostEnv, gpuship

from bed import hosts
from bed.docker_engine import DockerEngine, RestartableEngine
from bed.gpu_service import deny_device, run_gpu_service

pytestmark = pytest.mark.integration


def verify_running(nvml_host: HostEnv, engine: DockerEngine, cwd: Path) -> tuple[int, Any]:
    env = nvml_host(hosts.A100_550) | engine.env
    done = gpuship(["--format", "json", "verify", "--running"], env, cwd)
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def checks(document: Any, rule: str) -> dict[str, dict[str, Any]]:
    return {c["subject"]: c for c in document["result"]["checks"] if c["rule"] == rule}


def test_a_service_with_a_restart_policy_comes_back_and_still_sees_its_gpu(
    gpu_docker: RestartableEngine, gpu_engine: DockerEngine, gpu_host: HostEnv, tmp_path: Path
) -> None:
    run_gpu_service(gpu_engine, "llm", restart_policy={"Name": "unless-stopped"})
    run_gpu_service(gpu_engine, "oneshot")  # no restart policy
    code, before = verify_running(gpu_host, gpu_engine, tmp_path)
    assert code == 0, before["findings"]
    assert checks(before, "GSV302")["container llm"]["status"] == "ok"
    assert "NVIDIA A100-SXM4-80GB" in checks(before, "GSV302")["container llm"]["message"]
    restart = checks(before, "GSV501")
    assert restart["container llm"]["status"] == "ok"
    assert restart["container oneshot"]["status"] == "warn"

    restarted = gpu_docker.restart()
    running = {c.name for c in restarted.client.containers.list()}
    assert running == {"llm"}  # the one without a policy stayed down, as the finding said
    code, after = verify_running(gpu_host, restarted, tmp_path)
    assert code == 0, after["findings"]
    assert set(checks(after, "GSV302")) == {"container llm"}
    assert checks(after, "GSV302")["container llm"]["status"] == "ok"


def test_a_container_without_a_restart_policy_is_a_finding_naming_it(
    gpu_engine: DockerEngine, gpu_host: HostEnv, tmp_path: Path
) -> None:
    run_gpu_service(
        gpu_engine,
        "embed",
        labels={"com.docker.compose.project": "models", "com.docker.compose.service": "embed"},
    )
    _code, document = verify_running(gpu_host, gpu_engine, tmp_path)
    finding = next(f for f in document["findings"] if f["rule"] == "GSV501")
    assert finding["severity"] == "warning"
    assert "container embed" in finding["message"]
    assert "restart: unless-stopped' to service embed of compose project models" in finding["fix"]


def test_a_container_that_lost_its_device_access_is_named_with_the_fix(
    gpu_engine: DockerEngine, gpu_host: HostEnv, tmp_path: Path
) -> None:
    healthy = run_gpu_service(gpu_engine, "healthy", restart_policy={"Name": "always"})
    lost = run_gpu_service(gpu_engine, "llm", restart_policy={"Name": "always"})
    deny_device(lost.id, "/dev/nvidiactl")
    code, document = verify_running(gpu_host, gpu_engine, tmp_path)
    assert code == 1
    assert document["failed"] is True
    running = checks(document, "GSV302")
    assert running["container healthy"]["status"] == "ok"
    assert running["container llm"]["status"] == "fail"
    assert "cannot open /dev/nvidiactl" in running["container llm"]["message"]
    assert "docker rm -f llm" in running["container llm"]["fix"]
    assert "GSV504" in running["container llm"]["fix"]
    assert healthy.id != lost.id


HOOK = Path(__file__).resolve().parents[3] / "deploy" / "runner" / "gpuship-audit-hook.sh"


def test_the_runner_hook_and_the_timer_run_the_check(
    gpu_engine: DockerEngine, gpu_host: HostEnv, tmp_path: Path
) -> None:
    lost = run_gpu_service(gpu_engine, "llm", restart_policy={"Name": "always"})
    deny_device(lost.id, "/dev/nvidiactl")
    venv_bin = Path(sys.executable).parent
    env = gpu_host(hosts.A100_550) | gpu_engine.env
    env |= {"PATH": f"{venv_bin}{os.pathsep}{env['PATH']}", "GPUSHIP": str(venv_bin / "gpuship")}

    def hook(**extra: str) -> subprocess.CompletedProcess[str]:
        # As the runner starts a job-started hook (and the timer's unit runs it): bash -e.
        return subprocess.run(
            ["bash", "-e", str(HOOK)],
            env=env | extra,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )

    as_job_hook = hook()
    assert as_job_hook.returncode == 0  # never fails the job
    assert "container llm" in as_job_hook.stdout
    assert "::warning title=gpuship verify --running::" in as_job_hook.stdout
    as_timer = hook(GPUSHIP_VERIFY_STRICT="1")
    assert as_timer.returncode == 1  # the timer's unit shows as failed
