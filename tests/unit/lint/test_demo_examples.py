"""What `scripts/demo` shows: the hand-written example is caught, the sample project passes."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from gpuship.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[3] / "workflows-examples"


def test_demo_examples(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(EXAMPLES.parent)
    out = io.StringIO()
    argv = ["lint", "--fail-on", "never", "--format", "json", "workflows-examples/"]
    assert main(argv, environ={}, stdout=out, stderr=io.StringIO()) == 0
    findings = json.loads(out.getvalue())["findings"]
    by_file: dict[str, set[str]] = {}
    for finding in findings:
        by_file.setdefault(Path(finding["file"]).parent.name, set()).add(finding["rule"])
    # Secret in ENV, devel base in the final image, torch cu124 on a 12.1 base, build-time
    # model download, install after COPY ., unpinned requirements.
    assert {"GSL901", "GSL401", "GSL502", "GSL202", "GSL601", "GSL105"} <= by_file["before-gpuship"]
    assert "sample-project" not in by_file
