"""Text gpuship writes to a GitHub Actions log never carries a workflow command it did not mean
to send: file and directory names (real ones, on disk) holding `::error::`, `::add-mask::`,
`::stop-commands::` or `##[set-output ...]`, in every output format and on stderr. Commands are
found as the runner finds them (`workflow_commands.py`)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuship.cli.main import main
from gpuship.gha import LogStream, neutralise, neutralise_json
from gpuship.redaction import redact_credentials
from workflow_commands import commands_in, foreign_commands

ACTIONS = {"GITHUB_ACTIONS": "true"}
# Directory names a pull request can add; each makes a line of the text report start with it.
HOSTILE_NAMES = [
    "::error::pwned",
    "  ::add-mask::pwned",
    "ctx\n::stop-commands::pwned\n",
    "ctx\r::error file=x::pwned",
    "ctx ##[set-output name=failed]false",
]


def _lint(context: Path, *args: str) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main(["lint", str(context), *args], environ=ACTIONS, stdout=stdout, stderr=stderr)
    return code, stdout.getvalue(), stderr.getvalue()


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Relative paths, as `gpuship lint .` in a checkout gives: a line of the text report
    # starts with the file's path.
    monkeypatch.chdir(tmp_path)


def _context(tmp_path: Path, name: str) -> Path:
    (tmp_path / name).mkdir(parents=True)
    context = Path(name)
    # A COPY of a real file whose name is a command too; its finding quotes it.
    (context / "::add-mask::x").write_text("x")
    (context / "Dockerfile").write_text(
        'FROM python:3.12\nCOPY ["::add-mask::x", "/srv/##[set-output name=ok]1"]\n'
        "RUN pip install torch\n"
    )
    return context


@pytest.mark.parametrize("fmt", ["github", "text", "json", "sarif", "markdown"])
@pytest.mark.parametrize("name", HOSTILE_NAMES, ids=repr)
def test_names_on_disk_send_no_command_in_any_format(tmp_path: Path, name: str, fmt: str):
    code, stdout, stderr = _lint(_context(tmp_path, name), "--format", fmt)
    assert code in (0, 1), stderr
    assert foreign_commands(stdout) == []
    assert commands_in(stderr) == []
    if fmt == "github":
        assert commands_in(stdout), "the annotations themselves must still be commands"


def test_json_keeps_the_names_exactly(tmp_path: Path):
    name = "::error::x ##[set-output name=failed]false"
    _, stdout, _ = _lint(_context(tmp_path, name), "--format", "json")
    files = {finding["file"] for finding in json.loads(stdout)["findings"]}
    assert files == {f"{name}/Dockerfile"}
    assert "##[" not in stdout  # written #\u0023[ : the same string to a JSON reader


def test_an_error_naming_a_hostile_path_sends_no_command(tmp_path: Path):
    missing = tmp_path / "x\n::add-mask::pwned\n##[stop-commands]pwned"
    stdout, stderr = io.StringIO(), io.StringIO()
    argv = ["--config", str(missing), "lint", str(tmp_path)]
    code = main(argv, environ=ACTIONS, stdout=stdout, stderr=stderr)
    assert code == 2
    assert commands_in(stderr.getvalue()) == []
    assert [name for name, _ in commands_in(stdout.getvalue())] == ["error"]
    assert foreign_commands(stdout.getvalue()) == []


def test_neutralise_follows_the_runners_line_rules():
    assert neutralise("::error::x") == "%3A:error::x"
    assert neutralise(" \t::error::x") == " \t%3A:error::x"
    assert neutralise("a\r::b::c\n  ::d::e") == "a\r%3A:b::c\n  %3A:d::e"
    assert neutralise("text ::not::a command") == "text ::not::a command"
    assert neutralise("::x", line_start=False) == "::x"  # goes on a line already begun
    assert neutralise("a ##[add-mask]b") == "a #%23[add-mask]b"
    assert neutralise_json('{"a": "##[x]"}') == '{"a": "#\\u0023[x]"}'


TEXT = st.text(alphabet=":# [\r\n\tae]-", max_size=40)


@settings(max_examples=300, deadline=None)
@given(TEXT, st.lists(st.integers(min_value=0, max_value=40), max_size=6))
def test_log_stream_output_is_the_same_however_it_is_written(text: str, cuts: list[int]):
    out = io.StringIO()
    stream = LogStream(out, inert=True, redact=redact_credentials)
    at = 0
    for cut in sorted({min(c, len(text)) for c in cuts}):
        stream.write(text[at:cut])
        at = cut
    stream.write(text[at:])
    stream.flush()
    assert out.getvalue() == neutralise(text)
    assert commands_in(out.getvalue()) == []


def test_log_stream_outside_actions_only_hides_credentials():
    out = io.StringIO()
    stream = LogStream(out, inert=False, redact=redact_credentials)
    stream.write("::error::x https://u:secret@h/\n")
    assert out.getvalue() == "::error::x https://u:***@h/\n"
