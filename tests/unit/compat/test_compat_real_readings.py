"""Audits and GPU probes captured on real GPU machines (tests/data/gpu-readings, see its README)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from bed.gpu_probe import VARIANTS, build_probes
from gpuship.compat import rule_ids as rules
from gpuship.compat.audit import SCHEMA_PATH, load_audit
from gpuship.compat.checks.base import Status
from gpuship.compat.config import VerifyConfig
from gpuship.compat.verdict import judge
from gpuship.image.needs import read_gpu_needs
from gpuship.registry.access import RegistryAccess

READINGS = Path(__file__).resolve().parents[2] / "data" / "gpu-readings"
AUDITS = sorted(READINGS.glob("*.audit.json"))
PROBES = sorted(READINGS.glob("*.probes.json"))
RAN = "cudaSuccess"


@pytest.mark.parametrize("path", AUDITS, ids=[p.name for p in AUDITS])
def test_real_audit_is_valid_and_agrees_with_nvidia_smi(path: Path) -> None:
    jsonschema.validate(json.loads(path.read_text()), json.loads(SCHEMA_PATH.read_text()))
    audit = load_audit(path)
    assert audit.nvml.gpus, "a real audit holds at least one GPU"
    smi = path.with_name(path.name.replace(".audit.json", ".nvidia-smi.txt"))
    if smi.exists():
        text = smi.read_text()
        driver = re.search(r"Driver Version\s*:\s*(\S+)", text)
        assert driver is not None
        assert driver.group(1) == audit.nvml.driver_version
        cuda = re.search(r"CUDA Version\s*:\s*(\S+)", text)
        assert cuda is not None
        assert cuda.group(1) == audit.nvml.cuda_driver_version
        for gpu in audit.nvml.gpus:
            assert gpu.uuid in text
            assert gpu.name in text
    verdict = judge(audit, None, VerifyConfig(require_gpu_runtime=False, gpus=0))
    assert verdict.checks


def _probe_cases() -> list[Any]:
    cases = []
    for path in PROBES:
        audit = path.with_name(path.name.replace(".probes.json", ".audit.json"))
        for variant, recorded in json.loads(path.read_text()).items():
            cases.append(pytest.param(audit, variant, recorded, id=f"{audit.stem}-{variant}"))
    return cases


@pytest.fixture(scope="module")
def probe_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The probe libraries and images, rebuilt here by nvcc exactly as they were recorded."""
    return build_probes(tmp_path_factory.mktemp("gpu-probes"))


@pytest.mark.parametrize(("audit_path", "variant", "recorded"), _probe_cases())
def test_verdict_predicts_what_the_real_gpu_did(
    audit_path: Path, variant: str, recorded: dict[str, Any], probe_dirs: dict[str, Path]
) -> None:
    # The recording is of today's variant: same name, same nvcc targets.
    assert recorded["gencodes"] == list(VARIANTS[variant])
    ran = recorded["gpu_result"] == RAN
    # What verify said on the machine itself, before the probe ran there.
    assert recorded["verify"]["exit_code"] == (0 if ran else 1), recorded["verify"]
    # What today's code says, from the rebuilt image and the real audit.
    needs = read_gpu_needs(
        f"oci:{probe_dirs[variant] / 'image'}",
        platform="linux/amd64",
        access=RegistryAccess(environ={}),
        deep=True,
    )
    verdict = judge(load_audit(audit_path), needs, VerifyConfig(require_gpu_runtime=False, gpus=1))
    arch = [check for check in verdict.checks if check.rule == rules.ARCH]
    assert arch, "the verdict judges the image's GPU code"
    if ran:
        assert all(check.status in (Status.OK, Status.WARN) for check in arch), arch
        assert verdict.status is not Status.FAIL
    else:
        failing = [check for check in arch if check.status is Status.FAIL]
        assert failing, arch
        # The message names the very error the CUDA runtime gave on the real GPU.
        assert recorded["gpu_result"] in failing[0].message
        assert verdict.status is Status.FAIL
