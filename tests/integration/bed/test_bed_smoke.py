"""End-to-end proof of the test bed: an image built by the engine FROM scratch is pushed to
the registry and read back over HTTP, a workflow runs the root action through act, and the
real pynvml reads hosts through the NVML stand-in and the system libnvidia-ml."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import pytest
import requests

from bed import hosts
from bed.act import ActRunner
from bed.docker_engine import DockerEngine
from bed.images import build_scratch_image
from bed.nvml import read_with_pynvml
from bed.registry import Registry

pytestmark = pytest.mark.integration

MANIFEST_TYPES = ", ".join(
    [
        "application/vnd.docker.distribution.manifest.v2+json",
        "application/vnd.oci.image.manifest.v1+json",
    ]
)

SCHEMA_WORKFLOW = """\
name: bed smoke
on: push
jobs:
  schema:
    runs-on: ubuntu-latest
    steps:
      - id: gpuship
        uses: gpuship/gpuship@v1
        with:
          command: schema
      - name: Show the action's outputs
        env:
          EXIT_CODE: ${{ steps.gpuship.outputs.exit-code }}
        run: echo "bed-exit-code=$EXIT_CODE"
"""


def test_engine_image_pushed_to_registry_reads_back_over_http(
    docker_engine: DockerEngine, registry: Registry
) -> None:
    reference = registry.ref("bed/smoke", "1")
    image = build_scratch_image(
        docker_engine,
        reference,
        [{"etc/gpuship-smoke": b"smoke\n"}],
        env={"NVIDIA_REQUIRE_CUDA": "cuda>=12.4"},
    )
    pushed = docker_engine.client.images.push(registry.ref("bed/smoke"), tag="1", stream=False)
    assert '"error"' not in pushed

    manifest = requests.get(
        f"{registry.url}/v2/bed/smoke/manifests/1", headers={"Accept": MANIFEST_TYPES}, timeout=10
    )
    assert manifest.status_code == 200
    config_digest = manifest.json()["config"]["digest"]
    assert config_digest == image.id
    config = requests.get(f"{registry.url}/v2/bed/smoke/blobs/{config_digest}", timeout=10).json()
    assert "NVIDIA_REQUIRE_CUDA=cuda>=12.4" in config["config"]["Env"]
    assert (
        manifest.headers["Docker-Content-Digest"]
        in docker_engine.client.images.get(reference).attrs["RepoDigests"][0]
    )


def test_workflow_runs_root_action_through_act(act: ActRunner) -> None:
    result = act(SCHEMA_WORKFLOW)
    assert result.succeeded, result.log[-4000:]
    assert "bed-exit-code=0" in result.log
    assert '"$schema": "https://json-schema.org/draft/2020-12/schema"' in result.log
    # The locked wheels stay in the session's tool cache for later runs; the venv made from
    # them is the job's own, outside it (actions/_setup/README.md, threat model).
    tools = act.action_cache / "tool_cache" / "gpuship"
    assert [p.name for p in tools.iterdir() if p.name.startswith("wheels-")], result.log[-4000:]
    assert not result.outputs()["python"].startswith(str(act.action_cache / "tool_cache"))


def test_pynvml_reads_two_described_hosts(
    nvml_host: Callable[[Mapping[str, Any]], dict[str, str]],
) -> None:
    a100 = read_with_pynvml(nvml_host(hosts.A100_535))
    geforce = read_with_pynvml(nvml_host(hosts.RTX4090_550))
    assert (a100["driver"], a100["cuda"]) == ("535.230.02", 12020)
    assert a100["gpus"][0]["name"] == "NVIDIA A100-SXM4-80GB"
    assert a100["gpus"][0]["compute_capability"] == [8, 0]
    assert (geforce["driver"], geforce["cuda"]) == ("550.144.03", 12040)
    assert geforce["gpus"][0]["brand"] == hosts.BRAND_GEFORCE
    assert geforce["gpus"][0]["compute_capability"] == [8, 9]


def test_system_libnvidia_ml_answers_driver_not_loaded(real_nvml_env: dict[str, str]) -> None:
    read = read_with_pynvml(real_nvml_env)
    assert read["error"]["class"] == "NVMLError_DriverNotLoaded"
    assert json.dumps(read).count("Driver Not Loaded") == 1
