"""Metadata: COPY sources the build context does not hold."""

from __future__ import annotations

import posixpath
from collections.abc import Iterator

from gpuship.lint.analysis import Analysis
from gpuship.lint.checks.base import Hit, at_instruction
from gpuship.lint.context import BuildContext, context_relative
from gpuship.lint.stages import expand_word


def check(analysis: Analysis) -> Iterator[Hit]:
    """GSL002: COPY/ADD sources missing from (or ignored in) the build context."""
    context = analysis.context
    if not context.exists:
        return
    for stage in analysis.reachable_stages:
        for instruction, state in zip(stage.instructions, stage.states, strict=True):
            if instruction.keyword not in ("COPY", "ADD") or instruction.heredocs:
                continue
            if instruction.flag("from") is not None:
                continue
            for raw in instruction.args[:-1]:
                source, known = expand_word(raw, state.env)
                if not known or "://" in source or source.startswith("git@"):
                    continue
                if context.match(source):
                    continue
                yield at_instruction("GSL002", _why(context, source), instruction, stage, raw)


def _why(context: BuildContext, source: str) -> str:
    """Why a COPY source selects nothing, for the path BuildKit reads (`..` stops at the
    context's root: `../setup.py` is the context's setup.py)."""
    if any(c in source for c in "*?["):
        return f"{source} matches no file in the build context"
    normal = context_relative(source)
    if (context.root / normal).exists():
        return f"{source} is excluded by {context.ignore.origin or '.dockerignore'}"
    if posixpath.normpath(source.lstrip("/")).startswith(".."):
        return (
            f"{source} is outside the build context ({context.root}): BuildKit reads "
            f"{normal} from the context's root, and the context has none"
        )
    return f"{source} is not in the build context ({context.root})"
