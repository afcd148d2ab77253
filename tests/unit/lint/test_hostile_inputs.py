"""Lint's own bounds: .dockerignore patterns (linear matching, refused lines), ARG/ENV
expansion length, context files read, commands per RUN."""

from __future__ import annotations

import time
from pathlib import Path

from gpuship.limits import DEFAULT_LIMITS
from gpuship.lint.context import BuildContext
from gpuship.lint.dockerignore import IgnoreRules
from gpuship.lint.stages import expand


def test_backtracking_globs_match_in_linear_time() -> None:
    rules = IgnoreRules.parse("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b\n**/*a*a*a*a*a*a*c\n")
    started = time.process_time()
    assert not rules.excluded("a" * 4000)
    assert not rules.excluded("x/" + "a" * 4000)
    # A backtracking engine needs longer than the age of the universe here; RE2 milliseconds.
    assert time.process_time() - started < 1.0


def test_an_invalid_line_is_a_problem_and_the_others_still_apply() -> None:
    rules = IgnoreRules.parse("*.pyc\n[z-a]\n!\nsecrets/\n", origin=".dockerignore")
    assert [(p.line, p.limit) for p in rules.problems] == [(2, False), (3, False)]
    assert "invalid character class range" in rules.problems[0].message
    assert rules.excluded("b.pyc")
    assert not rules.excluded("a/b.pyc")  # `*` never crosses `/`
    assert rules.excluded("secrets/key")
    assert not rules.excluded("app.py")


def test_characters_regex_would_read_specially_stay_literal() -> None:
    rules = IgnoreRules.parse("a+b (1).txt\n{x}|$y\n")
    assert rules.excluded("a+b (1).txt")
    assert rules.excluded("{x}|$y")
    assert not rules.excluded("aab 1.txt")


def test_patterns_at_the_limit_and_past_it() -> None:
    text = "".join(f"p{n}\n" for n in range(4))
    at = IgnoreRules.parse(text, max_patterns=4)
    assert len(at.patterns) == 4
    assert at.problems == ()
    past = IgnoreRules.parse(text, max_patterns=3)
    assert len(past.patterns) == 3
    (problem,) = past.problems
    assert (problem.line, problem.limit) == (4, True)
    assert "limits.dockerignore-max-patterns" in problem.message


def test_expansion_at_the_limit_and_past_it() -> None:
    env = {"A": "x" * 10}
    assert expand("$A$A", env, max_bytes=20) == ("x" * 20, True)
    assert expand("$A$A", env, max_bytes=19) == ("$A$A", False)
    assert expand("${B:-$A$A}", env, max_bytes=19) == ("${B:-$A$A}", False)


def test_context_file_at_the_limit_and_past_it(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM scratch\n")
    (tmp_path / "req.txt").write_text("x" * 100)
    context = BuildContext(tmp_path, tmp_path / "Dockerfile", DEFAULT_LIMITS)
    assert context.read_text("req.txt") == "x" * 100
    tight = BuildContext(
        tmp_path, tmp_path / "Dockerfile", DEFAULT_LIMITS.override(context_file_max_bytes=99)
    )
    assert tight.read_text("req.txt") is None
    (unread,) = tight.unread
    assert unread.path == "req.txt"
    assert "limits.context-file-max-bytes" in unread.why


def test_fifo_and_links_out_of_the_context_are_not_read(tmp_path: Path) -> None:
    import os

    (tmp_path / "Dockerfile").write_text("FROM scratch\n")
    os.mkfifo(tmp_path / "pipe.sh")
    outside = tmp_path.parent / f"{tmp_path.name}-secret"
    outside.write_text("token\n")
    (tmp_path / "link.sh").symlink_to(outside)
    context = BuildContext(tmp_path, tmp_path / "Dockerfile")
    assert context.read_text("pipe.sh") is None
    assert context.read_text("link.sh") is None


def test_a_huge_ignore_file_is_reported_not_read(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM scratch\n")
    (tmp_path / ".dockerignore").write_text("x\n" * 100)
    limits = DEFAULT_LIMITS.override(context_file_max_bytes=199)
    context = BuildContext(tmp_path, tmp_path / "Dockerfile", limits)
    (problem,) = context.ignore.problems
    assert problem.limit
    assert "limits.context-file-max-bytes" in problem.message
