"""Metadata: COPY sources the build context does not hold."""

from __future__ import annotations

from collections.abc import Iterator

from gpuship.lint.analysis import Analysis
from gpuship.lint.checks.base import Hit, at_instruction
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
                pattern = any(c in source for c in "*?[")
                normal = source.lstrip("/")
                if not pattern and (context.root / normal).exists():
                    why = f"{source} is excluded by {context.ignore.origin or '.dockerignore'}"
                elif pattern:
                    why = f"{source} matches no file in the build context"
                else:
                    why = f"{source} is not in the build context ({context.root})"
                yield at_instruction("GSL002", why, instruction, stage, raw)
