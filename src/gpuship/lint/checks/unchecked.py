"""Metadata: what a limit kept lint from checking, and .dockerignore lines Docker refuses."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from gpuship.dockerfile.source import Span
from gpuship.lint.analysis import Analysis
from gpuship.lint.checks.base import Hit, at_instruction

_FILE_START = Span(1, 1, 1, 1)


def check(analysis: Analysis) -> Iterator[Hit]:
    """GSL003: a limit left part of the input unchecked; GSL004: invalid .dockerignore lines."""
    reported: set[tuple[int, str]] = set()
    for too_long in analysis.build.too_long:
        key = (too_long.instruction.index, too_long.name)
        if key in reported:  # a doubling ARG passes the limit again every few lines
            continue
        reported.add(key)
        yield at_instruction("GSL003", too_long.message, too_long.instruction, None, too_long.name)
    _ = analysis.runs  # parsing the RUNs (and the scripts they run) fills `capped_runs`
    for instruction in analysis.capped_runs:
        yield at_instruction(
            "GSL003",
            f"RUN runs more than {analysis.context.limits.run_max_commands} shell commands "
            "(scripts it runs included); the rest is not checked "
            "(limit limits.run-max-commands)",
            instruction,
            None,
        )
    context = analysis.context
    for unread in context.unread:
        path = context.root / unread.path if unread.path != "." else context.root
        yield Hit("GSL003", f"not read: {unread.why}", _FILE_START, None, None, file=path)
    ignore = context.ignore
    origin = Path(ignore.origin) if ignore.origin else context.root / ".dockerignore"
    for problem in ignore.problems:
        span = Span(problem.line, 1, problem.line, 1)
        rule = "GSL003" if problem.limit else "GSL004"
        yield Hit(rule, problem.message, span, None, None, file=origin)
