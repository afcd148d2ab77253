"""Audits captured on real GPU machines (tests/data/gpu-readings, see its README)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from gpuship.verify.audit import SCHEMA_PATH, load_audit
from gpuship.verify.config import VerifyConfig
from gpuship.verify.verdict import judge

READINGS = Path(__file__).resolve().parents[2] / "data" / "gpu-readings"
AUDITS = sorted(READINGS.glob("*.audit.json"))


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
        for gpu in audit.nvml.gpus:
            assert gpu.uuid in text
            assert gpu.name in text
    verdict = judge(audit, None, VerifyConfig(require_gpu_runtime=False, gpus=0))
    assert verdict.checks
