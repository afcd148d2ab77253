"""The CUDA rules' answers that rest on the knowledge base: certain, unknown, and sized."""

from __future__ import annotations

import pytest

from conftest import Linter, positions
from gpuship.report import Severity


def test_torch_from_a_requirements_file_with_its_own_index(lint: Linter) -> None:
    findings = lint(
        "FROM ubuntu:22.04\nCOPY req.txt /r/\nRUN pip install --no-cache-dir -r /r/req.txt\n",
        {"req.txt": "--extra-index-url https://download.pytorch.org/whl/cu121\ntorch==2.6.0\n"},
    )
    (hit,) = [f for f in findings if f.rule == "GSL501"]
    assert hit.location is not None and hit.location.line == 2
    assert hit.location.file.endswith("/req.txt")
    assert "installed by line 3 of the Dockerfile" in hit.message


@pytest.mark.parametrize(
    ("install", "severity", "says"),
    [
        # pip merges an extra index with PyPI: without a cu121 2.6.0 it installs PyPI's 2.6.0.
        # The build works, with another CUDA than asked for: a warning (issue #27).
        ("pip install", Severity.WARNING, "installs PyPI's torch 2.6.0 (default variant cu124)"),
        # uv stops at the first index that lists torch: the cu121 index without 2.6.0 fails.
        ("uv pip install --system", Severity.ERROR, "has no cu121 wheel"),
    ],
)
def test_an_extra_index_without_the_release(
    lint: Linter, install: str, severity: Severity, says: str
) -> None:
    findings = lint(
        f"FROM ubuntu:22.04\nRUN {install} --no-cache-dir torch==2.6.0 "
        "--extra-index-url https://download.pytorch.org/whl/cu121\n"
    )
    (hit,) = [f for f in findings if f.rule == "GSL501"]
    assert hit.severity is severity and says in hit.message


def test_a_nested_requirements_file_is_followed(lint: Linter) -> None:
    findings = lint(
        "FROM nvidia/cuda:12.1.1-base-ubuntu22.04\nCOPY . /app\n"
        "RUN pip install --no-cache-dir -r /app/requirements.txt\nUSER 1\n",
        {"requirements.txt": "-r gpu.txt\n", "gpu.txt": "torch==2.8.0\n"},
    )
    (hit,) = [f for f in findings if f.rule == "GSL502"]
    assert hit.location is not None and hit.location.file.endswith("/gpu.txt")
    assert "default variant cu128" in hit.message


def test_unknown_release_is_a_note_that_says_unknown(lint: Linter) -> None:
    findings = lint(
        "FROM nvidia/cuda:11.6.2-base-ubuntu20.04\nRUN pip install --no-cache-dir "
        "torch==1.12.1 --extra-index-url https://download.pytorch.org/whl/cu116\n"
    )
    (hit,) = [f for f in findings if f.rule == "GSL508"]
    assert hit.severity is Severity.NOTE and "unknown to gpuship" in hit.message
    assert not [f for f in findings if f.rule == "GSL501"]


def test_variant_missing_from_a_complete_release_is_an_error(lint: Linter) -> None:
    findings = lint(
        "FROM ubuntu:22.04\nRUN pip install --no-cache-dir torch==2.0.1+cu121 "
        "--extra-index-url https://download.pytorch.org/whl/cu121\n"
    )
    (hit,) = [f for f in findings if f.rule == "GSL501"]
    assert hit.severity is Severity.ERROR
    assert "cu117, cu118" in hit.message and "complete" in hit.message


def test_pypi_default_unknown_is_a_note(lint: Linter) -> None:
    findings = lint("FROM nvidia/cuda:13.0.2-base-ubuntu24.04\nRUN pip install torch==2.15.0\n")
    (hit,) = [f for f in findings if f.rule == "GSL508"]
    assert "from PyPI bundles is unknown to gpuship" in hit.message
    assert positions(findings, "GSL502") == []


def test_duplicated_cuda_libraries_are_sized(lint: Linter) -> None:
    base = "FROM nvidia/cuda:12.8.1-cudnn-runtime-ubuntu24.04\n"
    findings = lint(base + "RUN pip install --no-cache-dir torch==2.8.0\nUSER 1\n")
    (hit,) = [f for f in findings if f.rule == "GSL503"]
    assert hit.severity is Severity.WARNING
    assert "about 2.6 GB" in hit.message and "cudnn 707 MB" in hit.message
    # One small library wheel: the size is stated, and below 1 GB it stays a note.
    findings = lint(base + "RUN pip install --no-cache-dir nvidia-curand-cu12==10.3.9.90\n")
    (hit,) = [f for f in findings if f.rule == "GSL503"]
    assert hit.severity is Severity.NOTE and "curand 64 MB" in hit.message


def test_size_unknown_for_a_cuda_major_without_recorded_wheels(lint: Linter) -> None:
    findings = lint(
        "FROM nvidia/cuda:11.8.0-runtime-ubuntu22.04\nRUN pip install --no-cache-dir "
        "torch==2.1.2 --index-url https://download.pytorch.org/whl/cu118\n"
    )
    (hit,) = [f for f in findings if f.rule == "GSL503"]
    assert hit.severity is Severity.NOTE and "size is unknown to gpuship" in hit.message


def test_configured_severity_wins_over_the_size(lint: Linter) -> None:
    from gpuship.lint.config import LintConfig

    findings = lint(
        "FROM nvidia/cuda:12.8.1-runtime-ubuntu24.04\nRUN pip install torch==2.8.0\n",
        config=LintConfig.model_validate({"severity": {"GSL503": "note"}}),
    )
    assert [f.severity for f in findings if f.rule == "GSL503"] == [Severity.NOTE]
