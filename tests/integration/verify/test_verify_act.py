"""Through act: a `verify` job gates a `train` job with `needs:`; on a host that cannot run the
image, train never starts. The runner's NVML is the stand-in describing the host."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

from bed import hosts
from bed.act import ActRunner
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
