"""`verify --running`'s judgement of the in-container probe, on its exit code and output."""

from __future__ import annotations

from gpuship.compat.checks.base import Status
from gpuship.compat.readiness import GpuContainer
from gpuship.verify import rules
from gpuship.verify.running import PROBE_SCRIPT, judge_probe

PLAIN = GpuContainer(
    id="1", name="llm", image="acme/llm:1", gpus_via="device-request", restart_policy="always"
)
COMPOSED = PLAIN.model_copy(update={"compose_project": "models", "compose_service": "llm"})
LOST = "gpuship-running: nvidia-smi: Failed to initialize NVML: Unknown Error\n"


def test_a_container_that_sees_its_gpu_passes() -> None:
    check = judge_probe(PLAIN, 0, "gpuship-running: GPU 0: NVIDIA A100 (UUID: GPU-1)\n")
    assert (check.rule, check.status, check.subject) == (rules.RUNNING, Status.OK, "container llm")
    assert check.message == "GPU 0: NVIDIA A100 (UUID: GPU-1)"


def test_a_lost_gpu_names_the_container_and_how_to_recreate_it() -> None:
    plain = judge_probe(PLAIN, 12, LOST)
    assert plain.status is Status.FAIL
    assert "Failed to initialize NVML: Unknown Error" in plain.message
    assert (plain.fix or "").startswith("recreate it: docker rm -f llm")
    composed = judge_probe(COMPOSED, 12, LOST)
    assert "docker compose -p models up -d --force-recreate llm" in (composed.fix or "")
    assert "GSV504" in (composed.fix or "")


def test_the_probe_opens_every_gpu_node_before_asking_nvml() -> None:
    opens = PROBE_SCRIPT.index(': <"$d"')
    assert opens < PROBE_SCRIPT.index("nvidia-smi -L")
    assert "/dev/nvidiactl /dev/nvidia[0-9]* /dev/nvidia-uvm" in PROBE_SCRIPT
