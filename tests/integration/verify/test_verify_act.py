"""Through act: a `verify` job gates a `train` job with `needs:`; on a host that cannot run the
image, train never starts. The runner's NVML is the stand-in describing the host. The action's
`running` input checks the running GPU containers of the bed's Docker engine (bed.gpu_service:
containers that "have a GPU" on this GPU-less machine)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from bed import hosts
from bed.act import ActRunner
from bed.docker_engine import DockerEngine
from bed.gpu_service import deny_device, run_gpu_service
from bed.oci import make_image, push
from bed.registry import Registry
from unit.compat.require_values import IMAGES

pytestmark = pytest.mark.integration

HostEnv = Callable[[Mapping[str, Any]], dict[str, str]]

WORKFLOW = """\
name: train on GPU
on: push
jobs:
  verify:
    runs-on: [self-hosted, gpu]
    outputs:
      verdict: ${{{{ steps.verify.outputs.verdict }}}}
    steps:
      - uses: actions/checkout@v4
      - id: verify
        uses: gpuship/gpuship/actions/verify@v1
        with:
          image: {image}
          config: gpuship.yaml
  train:
    needs: verify
    runs-on: [self-hosted, gpu]
    steps:
      - run: echo "TRAIN-STARTED verdict=${{{{ needs.verify.outputs.verdict }}}}"
"""
# The bed's runners have no NVIDIA container runtime; that check has its own tests.
CONFIG = "verify:\n  require-gpu-runtime: false\n"


@pytest.fixture(scope="module")
def image_12_8(registry: Registry) -> str:
    push(
        registry.url, "verify/act", make_image([{"etc/k": b"12.8"}], env=IMAGES["12.8"]), tag="12.8"
    )
    return registry.ref("verify/act", "12.8")


def run(act: ActRunner, nvml_host: HostEnv, image: str, host: Mapping[str, Any]) -> Any:
    env = nvml_host(host) | {"DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    return act(WORKFLOW.format(image=image), files={"gpuship.yaml": CONFIG}, env=env)


def test_train_never_starts_on_a_host_that_cannot_run_the_image(
    act: ActRunner, nvml_host: HostEnv, image_12_8: str
) -> None:
    # A100 on R525: CUDA 12.0, and the 12.8 image lists no 525 branch -> refused.
    result = run(act, nvml_host, image_12_8, hosts.A100_525)
    assert result.returncode != 0
    assert "TRAIN-STARTED" not in result.log
    assert "unsatisfied condition: cuda>=12.8" in result.log, result.log[-4000:]


def test_train_runs_after_a_passing_verify(
    act: ActRunner, nvml_host: HostEnv, image_12_8: str
) -> None:
    result = run(act, nvml_host, image_12_8, hosts.H100_570)
    assert result.succeeded, result.log[-3000:]
    assert "TRAIN-STARTED verdict=ok" in result.log


# One run, four uses of the action: `running: true` on a host where one service lost its GPU,
# the default (no such check), and values that are not booleans (a typo is not "false").
RUNNING_WORKFLOW = """\
name: check the running services
on: push
jobs:
  verify:
    runs-on: [self-hosted, gpu]
    steps:
      - uses: actions/checkout@v4
      - id: running
        continue-on-error: true
        uses: gpuship/gpuship/actions/verify@v1
        with:
          running: true
          config: gpuship.yaml
      - id: default
        uses: gpuship/gpuship/actions/verify@v1
        with:
          config: gpuship.yaml
      - id: typo
        continue-on-error: true
        uses: gpuship/gpuship/actions/verify@v1
        with:
          running: maybe
          config: gpuship.yaml
      - id: smoke-typo
        continue-on-error: true
        uses: gpuship/gpuship/actions/verify@v1
        with:
          image: registry.invalid/never/pulled:1
          smoke: yes
      - run: >-
          echo "RESULT running=${{ steps.running.outputs.exit-code }}
          default=${{ steps.default.outputs.exit-code }}
          typo=${{ steps.typo.outputs.exit-code }}
          smoke-typo=${{ steps.smoke-typo.outputs.exit-code }}"
"""


def test_the_running_input_names_the_container_that_lost_its_gpu(
    act: ActRunner, gpu_engine: DockerEngine, gpu_host: HostEnv
) -> None:
    run_gpu_service(gpu_engine, "healthy", restart_policy={"Name": "always"})
    lost = run_gpu_service(gpu_engine, "llm", restart_policy={"Name": "always"})
    deny_device(lost.id, "/dev/nvidiactl")
    env = gpu_host(hosts.A100_550) | gpu_engine.env
    result = act(RUNNING_WORKFLOW, files={"gpuship.yaml": CONFIG}, env=env)
    assert result.succeeded, result.log[-4000:]
    # Only `running: true` looked inside: it fails naming the container; the default does not.
    assert "RESULT running=1 default=0 typo=2 smoke-typo=2" in result.log, result.log[-4000:]
    assert "container llm" in result.log
    assert "cannot open /dev/nvidiactl" in result.log
    assert "docker rm -f llm" in result.log
    # A value that is not a boolean is one line naming the input, before gpuship runs (no
    # image is read: the smoke typo's registry does not exist).
    for name, value in (("running", "maybe"), ("smoke", "yes")):
        lines = [line for line in result.log.splitlines() if f"input {name}:" in line]
        assert len(lines) == 1, lines
        assert f"input {name}: '{value}' is not 'true' or 'false'" in lines[0]
    assert "registry.invalid" not in result.log
