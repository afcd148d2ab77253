"""Lint needs no platform wheel: with the `dockerfile` package unimportable (as on arm64 Linux
and macOS, where it has no wheel), the whole corpus gives the findings its goldens record."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from test_corpus import CASES, CORPUS

# Block the wheel as a missing platform would, lint each corpus case through the CLI, and say
# whether anything imported it.
_SCRIPT = """
import io, json, os, sys
sys.modules["dockerfile"] = None
from gpuship.cli.main import main
results = {}
for case in sys.argv[1:]:
    os.chdir(case)
    out = io.StringIO()
    main(["lint", "Dockerfile", "--format", "json", "--fail-on", "never"], stdout=out)
    results[case] = json.loads(out.getvalue())["findings"]
print(json.dumps({"results": results, "imported": sys.modules["dockerfile"] is not None}))
"""


def test_corpus_findings_without_the_wheel() -> None:
    cases = [str(CORPUS / name) for name in CASES]
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, *cases], capture_output=True, text=True, check=True
    )
    report = json.loads(done.stdout)
    assert report["imported"] is False
    for case in cases:
        expected = json.loads((Path(case) / "expected.json").read_text())
        found = report["results"][case]
        assert len(found) == len(expected), case
        # Every key expected.json records (the message, where it records one).
        assert [{k: f[k] for k in e} for f, e in zip(found, expected, strict=True)] == expected
