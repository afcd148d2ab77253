"""GSL005 is an error, so it must be certain: every script the syntax check rejects, the real
shells reject too (`bash -n -c` and `sh -n -c`, /bin/sh being dash on Debian and Ubuntu bases).
Checked on the unit cases and on scripts hypothesis builds from shell words, operators and
quotes; and the scripts the check accepts among the unit cases parse in both."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuship.lint.shellsyntax import syntax_problem

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "unit" / "lint"))
from test_shellsyntax import FAILS, PARSES

pytestmark = pytest.mark.integration
SHELLS = [shell for shell in ("bash", "sh") if shutil.which(shell)]


def parses(shell: str, script: str) -> bool:
    """Whether `shell` parses `script` (`-n`: read, run nothing)."""
    return (
        subprocess.run([shell, "-n", "-c", script], capture_output=True, timeout=10).returncode == 0
    )


def test_the_real_shells_are_there() -> None:
    assert SHELLS == ["bash", "sh"]


@pytest.mark.parametrize("script", PARSES)
def test_what_the_check_accepts_parses(script: str) -> None:
    assert all(parses(shell, script) for shell in SHELLS)


@pytest.mark.parametrize("script", [case[0] for case in FAILS])
def test_what_the_check_rejects_no_shell_parses(script: str) -> None:
    assert not any(parses(shell, script) for shell in SHELLS)


# Words and operators RUN lines are made of, reserved words and quoted look-alikes included.
PIECES = st.sampled_from(
    [
        "if",
        "then",
        "elif",
        "else",
        "fi",
        "for",
        "in",
        "do",
        "done",
        "while",
        "until",
        "case",
        "esac",
        "a)",
        "*)",
        ";;",
        "{",
        "}",
        "(",
        ")",
        ";",
        "&&",
        "||",
        "|",
        "&",
        "\n",
        "echo",
        "x",
        "'fi'",
        '"done"',
        "\\fi",
        "A=1",
        "!",
        ">",
        "out",
        "true",
        '"$(uname -m)"',
        "$X",
        "make",
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(PIECES, min_size=1, max_size=14))
def test_every_script_the_check_rejects_the_shells_reject(pieces: list[str]) -> None:
    script = " ".join(pieces)
    if syntax_problem(script) is not None:
        assert not any(parses(shell, script) for shell in SHELLS), script
