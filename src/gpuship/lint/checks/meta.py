"""Metadata: COPY sources the build context does not hold, RUNs no shell can parse."""

from __future__ import annotations

import posixpath
from collections.abc import Iterator

from gpuship.dockerfile.source import Instruction
from gpuship.lint.analysis import Analysis, Run
from gpuship.lint.checks.base import Hit, at_instruction, executed_runs
from gpuship.lint.context import BuildContext, context_relative
from gpuship.lint.shellsyntax import syntax_problem
from gpuship.lint.stages import expand_word


def check(analysis: Analysis) -> Iterator[Hit]:
    """GSL002: COPY/ADD sources missing from (or ignored in) the build context; GSL005: a RUN
    whose shell script no POSIX shell parses."""
    yield from _shell_syntax(analysis)
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


# The shells whose grammar `lint.shellsyntax` judges (SHELL ["/bin/bash", "-c"] and the like).
_POSIX_SHELLS = frozenset({"sh", "bash", "dash", "ash", "ksh", "zsh"})
# Windows bases run RUN with cmd, whose grammar is another.
_WINDOWS = ("windows", "nanoserver", "servercore")


def _shell_syntax(analysis: Analysis) -> Iterator[Hit]:
    """GSL005 on a shell-form RUN (or ONBUILD RUN) whose script a POSIX shell rejects: the
    build fails there (see `lint.shellsyntax` for what is judged)."""
    for run in executed_runs(analysis):
        instruction = run.instruction
        if instruction.json_form or instruction.heredocs or not _posix_shell(analysis, run):
            continue
        script = instruction.text.sub(instruction.body_offset)
        problem = syntax_problem(script.value)
        if problem is not None:
            yield Hit(
                "GSL005",
                f"no shell can run this RUN: {problem.message}",
                script.span(problem.start, problem.end),
                instruction,
                run.stage,
            )


def _posix_shell(analysis: Analysis, run: Run) -> bool:
    """Whether the RUN's shell is a POSIX shell: the last SHELL before it in its stage, else the
    one its stage starts with (`_stage_shells`)."""
    own = [
        i
        for i in analysis.per_file(_shells_by_stage).get(run.stage.index, ())
        if i.index < run.instruction.index
    ]
    if own:
        return _is_posix(own[-1])
    return analysis.per_file(_stage_shells)[run.stage.index]


def _shells_by_stage(analysis: Analysis) -> dict[int, list[Instruction]]:
    """The SHELL instructions of each stage, in order. Once per file."""
    found: dict[int, list[Instruction]] = {}
    for stage in analysis.stages:
        shells = [i for i in stage.instructions if i.keyword == "SHELL" and i.args]
        if shells:
            found[stage.index] = shells
    return found


def _stage_shells(analysis: Analysis) -> dict[int, bool]:
    """Whether each stage starts with a POSIX shell: the last SHELL up its FROM chain, else
    /bin/sh on a base that is not Windows. Once per file, a stage from its parent."""
    shells = analysis.per_file(_shells_by_stage)
    found: dict[int, bool] = {}
    for stage in analysis.stages:  # a parent always comes earlier in the file
        if stage.parent is None:
            found[stage.index] = not any(w in stage.base.lower() for w in _WINDOWS)
        else:
            parent = shells.get(stage.parent)
            found[stage.index] = _is_posix(parent[-1]) if parent else found[stage.parent]
    return found


def _is_posix(shell: Instruction) -> bool:
    return posixpath.basename(shell.args[0]) in _POSIX_SHELLS
