"""The ML Dockerfile corpus: every file yields exactly the findings in its expected.json.

Each `tests/corpus/<name>/` is a build context (Dockerfile plus the files a build would
send); `expected.json` lists the findings a reviewer checked by hand: rule, file (relative
to the context), line, column and severity, and the message where its wording is the point
(knowledge-base answers, "unknown to gpuship", sizes). `hadolint.json` beside it records what
hadolint reports for the same file (checked against the real hadolint in
tests/integration/lint/test_hadolint_gap.py).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gpuship.lint.engine import lint_file, rule_policy
from gpuship.lint.settings import LintSettings

CORPUS = Path(__file__).resolve().parents[2] / "corpus"
CASES = sorted(p.name for p in CORPUS.iterdir() if (p / "Dockerfile").is_file())


def corpus_findings(case: Path) -> list[dict[str, object]]:
    """Lint one corpus case with the default config, as expected.json records it."""
    config = LintSettings()
    previous = Path.cwd()
    os.chdir(case)  # finding paths are relative to the working directory
    try:
        result = lint_file(
            Path("Dockerfile"),
            display="Dockerfile",
            context_dir=Path("."),
            build_args={},
            target=None,
            config=config,
            policy=rule_policy(config),
            platform="linux/amd64",  # TARGETARCH & co.: the same on every test machine
        )
    finally:
        os.chdir(previous)
    return [
        {
            "rule": f.rule,
            "file": f.location.file if f.location else "",
            "line": f.location.line if f.location else 0,
            "column": f.location.column if f.location else 0,
            "severity": f.severity.value,
            "message": f.message,
        }
        for f in result.findings
    ]


def test_corpus_is_large_enough() -> None:
    assert len(CASES) >= 20


@pytest.mark.parametrize("name", CASES)
def test_corpus_case(name: str) -> None:
    case = CORPUS / name
    expected = json.loads((case / "expected.json").read_text())
    found = corpus_findings(case)
    # The message is compared only where expected.json records it.
    assert [
        {k: v for k, v in f.items() if k != "message" or "message" in e}
        for f, e in zip(found, expected, strict=False)
    ] + found[len(expected) :] == expected


def test_no_error_in_the_corpus_rests_on_missing_knowledge() -> None:
    """An error must be certain: a knowledge-base gap is a note that says "unknown"."""
    for name in CASES:
        for finding in corpus_findings(CORPUS / name):
            if "unknown" in finding["message"]:
                assert finding["severity"] == "note", (name, finding)
