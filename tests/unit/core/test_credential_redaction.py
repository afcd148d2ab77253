"""Credentials written into a URL (`https://user:token@host/...`) never come out of gpuship:
not in an error, a report in any format, a report file, the job summary, step outputs or a log
line. `redact_credentials` is the one helper; these tests go through the CLI."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from gpuship.cli.main import main
from gpuship.errors import redact_credentials, shown

SECRET = "glpat-s3cr3tT0ken"


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        ("https://user:tok@ghcr.io/o/a:1", "https://user:***@ghcr.io/o/a:1"),
        ("clone https://TOKEN@github.com/o/r.git now", "clone https://***@github.com/o/r.git now"),
        (
            "git+https://oauth2:tok@gitlab.com/x.git@v1",
            "git+https://oauth2:***@gitlab.com/x.git@v1",
        ),
        ("https://u:p@ss@host:5000/x", "https://u:***@host:5000/x"),  # a raw "@" in a password
        ("http://u:p@[::1]:5000/", "http://u:***@[::1]:5000/"),
        (
            '{"url": "https://u:p@h", "mail": "a@b.c"}',
            '{"url": "https://u:***@h", "mail": "a@b.c"}',
        ),
        # Not credentials: an e-mail address, "@" in a query, a placeholder in advice.
        ("mail bob@example.com", "mail bob@example.com"),
        ("https://host/path?x=a@b", "https://host/path?x=a@b"),
        ("git+https://...@<commit sha>", "git+https://...@<commit sha>"),
    ],
)
def test_redact_credentials(text: str, redacted: str):
    assert redact_credentials(text) == redacted


def test_shown_redacts_before_it_cuts():
    # Cut first, the "@" would be gone and the password left in the message.
    text = f"https://user:{SECRET * 10}@registry.example/app:1"
    assert SECRET[:10] not in shown(text)


def _run(argv: list[str], environ: dict[str, str]) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main(argv, environ=environ, stdout=stdout, stderr=stderr)
    return code, stdout.getvalue(), stderr.getvalue()


@pytest.mark.parametrize("actions", [False, True], ids=["terminal", "actions"])
def test_an_image_given_as_a_url_with_credentials(actions: bool):
    environ = {"GITHUB_ACTIONS": "true"} if actions else {}
    code, stdout, stderr = _run(["inspect", f"https://ci:{SECRET}@ghcr.io/o/app:1"], environ)
    assert code == 2
    assert "https://ci:***@ghcr.io/o/app:1" in stderr
    assert SECRET not in stdout + stderr


@pytest.mark.parametrize("fmt", ["text", "github", "json", "sarif", "markdown"])
def test_a_report_quoting_a_url_with_credentials(tmp_path: Path, fmt: str):
    (tmp_path / "Dockerfile").write_text(
        f"FROM python:3.12\nRUN pip install git+https://oauth2:{SECRET}@gitlab.com/ml/lib.git\n"
    )
    summary, outputs = tmp_path / "summary.md", tmp_path / "outputs"
    environ = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_OUTPUT": str(outputs),
    }
    report, sarif = tmp_path / "report.out", tmp_path / "report.sarif"
    argv = ["lint", str(tmp_path), "--format", fmt, "--output", str(report), "--sarif", str(sarif)]
    code, stdout, stderr = _run(argv, environ)
    assert code in (0, 1), stderr
    written = [report.read_text(), sarif.read_text(), summary.read_text(), outputs.read_text()]
    assert "oauth2:***@gitlab.com" in report.read_text()  # the finding is there, redacted
    for text in [stdout, stderr, *written]:
        assert SECRET not in text
