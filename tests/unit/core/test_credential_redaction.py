"""Credentials written into a URL (`https://user:token@host/...`) never come out of gpuship:
not in an error, a report in any format, a report file, the job summary, step outputs or a log
line. `redact_credentials` is the one helper; these tests go through the CLI, and compare it
with a plain reference implementation (`_reference`) on generated text."""

from __future__ import annotations

import io
import json
import string
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuship.cli.main import main
from gpuship.redaction import redact_credentials, redact_data, shown

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
        # Pre-signed redirects: the signature and token values, nothing else.
        (
            "GET https://s3.example/b?X-Amz-Credential=AKIA%2F&X-Amz-Date=2026&"
            "X-Amz-Security-Token=FwoG&X-Amz-Signature=ab12 failed",
            "GET https://s3.example/b?X-Amz-Credential=***&X-Amz-Date=2026&"
            "X-Amz-Security-Token=***&X-Amz-Signature=*** failed",
        ),
        (
            "https://pkg.example/blobs/x?se=2026&sig=Ab%2Bc%3D&sp=r",
            "https://pkg.example/blobs/x?se=2026&sig=***&sp=r",
        ),
        (
            '"https://cdn.example/data?verify=1720932472-9QlP%3D"',
            '"https://cdn.example/data?verify=***"',
        ),
        ("see https://h/cb?access_token=t0k#frag", "see https://h/cb?access_token=***#frag"),
        ("https://h/?TOKEN=abc&signature=d", "https://h/?TOKEN=***&signature=***"),
        # Not credentials: a parameter merely ending in a credential's name, a bare word.
        ("https://h/?designature=x&mysig=y", "https://h/?designature=x&mysig=y"),
        ("token=abc in a sentence", "token=abc in a sentence"),
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


# JSON and SARIF escape "ä" as \\u00e4: before the fix the pattern, run over the rendered
# text, no longer saw that password and both showed it.
@pytest.mark.parametrize("password", [SECRET, f"päss{SECRET}"], ids=["ascii", "non-ascii"])
@pytest.mark.parametrize("fmt", ["text", "github", "json", "sarif", "markdown"])
def test_a_report_quoting_a_url_with_credentials(tmp_path: Path, fmt: str, password: str):
    (tmp_path / "Dockerfile").write_text(
        f"FROM python:3.12\nRUN pip install git+https://oauth2:{password}@gitlab.com/ml/lib.git\n",
        encoding="utf-8",
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


# What a URL's userinfo cannot hold (besides white space), and what may start its host.
_NOT_USERINFO = set('/?#"<>\\[]{}')
_HOST_START = set(string.ascii_letters + string.digits + "[%")
_NAMES = [
    *("x-amz-signature", "x-amz-credential", "x-amz-security-token"),
    *("x-goog-signature", "x-goog-credential", "signature", "sig", "verify", "token"),
    *("access_token", "refresh_token", "id_token", "client_secret", "password", "jwt"),
]
_NOT_VALUE = set("&#\"'<>\\[]{}")


def _reference(text: str) -> str:
    """What `redact_credentials` must do, written plainly (and slowly) from its definition."""
    return _reference_query(_reference_userinfo(text))


def _reference_userinfo(text: str) -> str:
    out, done = [], 0
    while (at := text.find("://", done)) != -1:
        end = at + 3
        while end < len(text) and not text[end].isspace() and text[end] not in _NOT_USERINFO:
            end += 1
        ats = [
            k for k in range(at + 4, end) if text[k] == "@" and text[k + 1 : k + 2] in _HOST_START
        ]
        if not ats:
            out.append(text[done : at + 3])
            done = at + 3
            continue
        user, colon, _ = text[at + 3 : ats[-1]].partition(":")
        out.append(text[done:at] + "://" + (f"{user}:***" if colon else "***") + "@")
        done = ats[-1] + 1
    return "".join(out) + text[done:]


def _reference_query(text: str) -> str:
    out, done, index = [], 0, 0
    while index < len(text):
        name = next(
            (n for n in _NAMES if text[index] in "?&" and _is_parameter(text, index + 1, n)), None
        )
        if name is None:
            index += 1
            continue
        start = end = index + 1 + len(name) + 1
        while end < len(text) and not text[end].isspace() and text[end] not in _NOT_VALUE:
            end += 1
        if end == start:
            index += 1
            continue
        out.append(text[done:start] + "***")
        done = index = end
    return "".join(out) + text[done:]


def _is_parameter(text: str, at: int, name: str) -> bool:
    word = text[at : at + len(name) + 1]
    return word.isascii() and word.lower() == name + "="


_PIECES = [
    *"aZ09.:/@?&=#[]{} %ä\"'<>+-_",
    "\u00a0",
    "://",
    "https://",
    "git+ssh://",
    "u:p@",
    "@h",
    "?sig=",
    "&Sig=",
    "&X-Amz-Signature=",
    "?token",
    "a.",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=40).map("".join))
def test_redaction_agrees_with_the_reference(text: str):
    assert redact_credentials(text) == _reference(text)


def _mib(piece: str) -> str:
    """`piece` repeated to 1 MiB."""
    return piece * (2**20 // len(piece))


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        # Each of these took time quadratic in its length (40,000 "a." took 1.7 s; 1 MiB,
        # minutes): they must be read about once. Time itself is measured in bench/redaction.
        (_mib("a.") + "@", _mib("a.") + "@"),
        (_mib("a.b") + "://u:p@h", _mib("a.b") + "://u:***@h"),
        ("x://" + _mib("a@") + "/", "x://***@a@/"),
        (_mib("://") + "@h", _mib("://") + "@h"),
        (_mib("a://b") + "@h", _mib("a://b")[:-5] + "a://***@h"),
        (_mib("?sig="), "?sig=***"),
        (_mib("&sig") + "=x", _mib("&sig") + "=***"),
        ("?token=" + _mib("x") + "&ok=1", "?token=***&ok=1"),
    ],
    ids=["a-dots", "scheme-runs", "ats", "schemes", "many-urls", "sigs", "names", "long-value"],
)
def test_a_mebibyte_of_hostile_text(text: str, redacted: str):
    assert redact_credentials(text) == redacted


def test_json_and_yaml_are_redacted_before_they_escape_the_password():
    # ensure_ascii writes "ä" as \u00e4, which no URL pattern over the text takes for a
    # password; the data is redacted before it is serialised.
    url = f"https://ci:päss{SECRET}@ghcr.io/o/app"
    data = {"image": url, url: [url, ("x", 1)], "n": None}
    assert redact_credentials(json.dumps(url)) != json.dumps("https://ci:***@ghcr.io/o/app")
    hidden = "https://ci:***@ghcr.io/o/app"
    assert redact_data(data) == {"image": hidden, hidden: [hidden, ["x", 1]], "n": None}
