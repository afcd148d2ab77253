"""deploy/model-service/: the Compose file and the systemd unit for a model service.

Each is checked by the tool that reads it where this machine has it (`docker compose config`:
this machine's docker CLI has no compose plugin, so the file is read as YAML and its service
run on the real engine instead; `systemd-analyze verify` for the unit). The healthcheck both
carry is run for real in a container "with a GPU" (bed.gpu_service): healthy while the
container reaches the GPU, unhealthy once its device access is taken away.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from bed.docker_engine import DockerEngine
from bed.gpu_service import deny_device, run_gpu_service

pytestmark = pytest.mark.integration

TEMPLATES = Path(__file__).resolve().parents[3] / "deploy" / "model-service"
COMPOSE = TEMPLATES / "compose.yaml"
UNIT = TEMPLATES / "model-service.service"


def compose_service() -> dict[str, Any]:
    service: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())["services"]["llm"]
    return service


def unit_health_command() -> str:
    text = UNIT.read_text().replace("\\\n", " ")
    start = next(line for line in text.splitlines() if line.startswith("ExecStart="))
    words = shlex.split(start.removeprefix("ExecStart="))
    return words[words.index("--health-cmd") + 1]


def test_compose_service_restarts_reserves_gpus_and_checks_them() -> None:
    if (
        shutil.which("docker")
        and subprocess.run(
            ["docker", "compose", "version"], capture_output=True, check=False
        ).returncode
        == 0
    ):
        done = subprocess.run(
            ["docker", "compose", "-f", str(COMPOSE), "config", "--quiet"],
            env={"IMAGE": "example/llm:1", "PATH": "/usr/bin:/bin:/usr/local/bin"},
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
    service = compose_service()
    assert service["restart"] == "unless-stopped"
    devices = service["deploy"]["resources"]["reservations"]["devices"]
    assert devices == [{"driver": "nvidia", "count": "all", "capabilities": ["gpu", "utility"]}]
    health = service["healthcheck"]
    assert health["test"][0] == "CMD-SHELL"
    # One health command in both templates: the one the test below runs.
    assert health["test"][1] == unit_health_command()


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="needs systemd-analyze")
def test_the_unit_passes_systemd_analyze_and_a_broken_copy_does_not(tmp_path: Path) -> None:
    def verify(unit: Path) -> str:
        done = subprocess.run(
            ["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60
        )
        return f"{done.returncode}:{done.stdout}{done.stderr}".strip()

    assert verify(UNIT) == "0:"
    text = UNIT.read_text()
    assert re.search(r"^Restart=always$", text, re.M)
    assert "After=docker.service nvidia-persistenced.service nvidia-cdi-refresh.service" in text
    broken = tmp_path / "model-service.service"
    broken.write_text(text.replace("Restart=always", "Restart=sometimes"))
    assert "Failed to parse service restart specifier" in verify(broken)


def _health(container: Any, want: str, deadline_s: float = 60) -> str:
    status = ""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        container.reload()
        status = container.attrs["State"]["Health"]["Status"]
        if status == want:
            return status
        time.sleep(0.5)
    return status


def test_the_healthcheck_fails_when_the_container_loses_its_gpu(gpu_engine: DockerEngine) -> None:
    command = compose_service()["healthcheck"]["test"]
    second = 1_000_000_000
    container = run_gpu_service(
        gpu_engine,
        "llm",
        restart_policy={"Name": compose_service()["restart"]},
        healthcheck={"test": command, "interval": second, "timeout": 5 * second, "retries": 1},
    )
    assert _health(container, "healthy") == "healthy"
    deny_device(container.id, "/dev/nvidiactl")
    assert _health(container, "unhealthy") == "unhealthy"
    log = container.attrs["State"]["Health"]["Log"]
    assert log[-1]["ExitCode"] == 1
