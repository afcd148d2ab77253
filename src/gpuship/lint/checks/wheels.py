"""GSL511: binary wheels built for another torch, CUDA major or Python than the image has.

Compiled extensions (flash-attn, flashinfer, xformers, vLLM...) are built against one torch
release, one CUDA major and one CPython; their wheel file names say which
(`flash_attn-2.7.4+cu12torch2.6cxx11abiFALSE-cp311-cp311-linux_x86_64.whl`, Dao-AILab/
flash-attention setup.py `get_wheel_url`), and so do flashinfer's per-build indexes
(`https://flashinfer.ai/whl/cu124/torch2.4/`). pip checks only the Python tag: a wheel for
another torch or CUDA installs fine and fails at import with an undefined symbol or a CUDA
runtime that is not there. What the image installs comes from the same stage chain: a pinned
torch (its CUDA from its index or the knowledge base's PyPI default), a pytorch/pytorch base
tag, and the Python of an official python:X.Y base. Anything else is unknown and not judged.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from gpuship.cuda.version import Version
from gpuship.lint.analysis import Analysis, Run
from gpuship.lint.checks.base import Hit, at_word, image_reference, reachable_runs
from gpuship.lint.checks.cudabase import base_cuda
from gpuship.lint.packages import PythonInstall, WheelBuild, os_install, wheel_build
from gpuship.lint.shell import Command, Word, expand_shell
from gpuship.lint.stages import Stage

_FLASHINFER_INDEX = re.compile(r"flashinfer\.ai/whl/cu(\d\d)(\d)/torch(\d+\.\d+)")
_PYTHON_TAG = re.compile(r"^(3\.\d+)(?:[.\-]|$)")
_PYTHON_PACKAGE = re.compile(r"^python3\.\d+(?:-.*)?$")


@dataclass(frozen=True)
class Stack:
    """What a stage chain gives compiled extensions: torch (major.minor), CUDA, Python."""

    torch: str | None
    cuda: Version | None
    python: str | None
    torch_from: str  # where the torch facts come from, for the message


TorchFacts = tuple[Run, str | None, Version | None, str]  # run, torch x.y, CUDA, shown


def foreign_wheels(analysis: Analysis, torches: list[TorchFacts]) -> Iterator[Hit]:
    """GSL511 for each wheel whose build disagrees with the stack of the stage it lands in."""
    stacks: dict[int, Stack] | None = None  # by stage, once the first wheel is found
    for run in reachable_runs(analysis):
        for command in run.commands:
            install = run.python_install(command)
            if install is None or install.tool not in ("pip", "uv"):
                continue
            builds = list(_wheels(run, command, install))
            if not builds:
                continue
            if stacks is None:
                stacks = _stacks(analysis, torches)
            for word, build in builds:
                problem = _mismatch(build, stacks[run.stage.index])
                if problem is not None:
                    yield at_word("GSL511", problem, run, command, word)


def _wheels(
    run: Run, command: Command, install: PythonInstall
) -> Iterator[tuple[Word, WheelBuild]]:
    env = run.env_at(command)
    flashinfer = None
    for url in install.index_urls:
        match = _FLASHINFER_INDEX.search(expand_shell(url.text, env)[0])
        if match:
            flashinfer = WheelBuild(
                "flashinfer", f"{match.group(1)}.{match.group(2)}", match.group(3), None
            )
    for spec in install.specs:
        if spec.word is None:
            continue
        value, known = expand_shell(spec.text, env)
        if not known:
            continue
        if spec.kind in ("path", "url"):
            build = wheel_build(value)
            if build is not None:
                yield spec.word, build
        elif flashinfer is not None and spec.name.startswith("flashinfer"):
            yield spec.word, flashinfer


_Facts = tuple[str | None, Version | None, str]  # torch x.y, its CUDA, how to name it


def _stacks(analysis: Analysis, torches: list[TorchFacts]) -> dict[int, Stack]:
    """torch, CUDA and Python of each stage the target builds, from its whole FROM chain (a
    torch installed before or after a wheel is the image's torch all the same). One pass over
    the stages, each starting from its parent's: a chain of a thousand stages that each
    install a wheel is not walked once per stage."""
    own: dict[int, set[_Facts]] = {}
    for run, torch, cuda, shown in torches:
        own.setdefault(run.stage.index, set()).add((torch, cuda, shown))
    facts: dict[int, frozenset[_Facts]] = {}
    other_python: dict[int, bool] = {}  # the chain installs another Python
    stacks: dict[int, Stack] = {}
    for stage in analysis.reachable_stages:  # a parent always comes earlier in the file
        parent = stage.parent
        found = facts.get(parent, frozenset()) if parent is not None else frozenset()
        # Two different facts make the stack ambiguous, however many more there are.
        found = frozenset(list(found | own.get(stage.index, set()))[:2])
        facts[stage.index] = found
        other_python[stage.index] = (parent is not None and other_python.get(parent, False)) or any(
            _installs_python(command) for run in analysis.runs_of(stage) for command in run.commands
        )
        stacks[stage.index] = _stack(analysis, stage, found, other_python[stage.index])
    return stacks


def _stack(analysis: Analysis, stage: Stage, facts: frozenset[_Facts], other_python: bool) -> Stack:
    """torch, CUDA and Python of `stage`'s chain, each None when unknown or ambiguous."""
    found = set(facts)
    root = analysis.build.root_base(stage)
    base = base_cuda(root)
    if not found and base is not None and base.source == "pytorch/pytorch":
        reference = image_reference(root)
        tag = reference.tag if reference and reference.tag else ""
        release = re.match(r"^(\d+\.\d+)", tag)
        cuda = Version.parse(base.cuda) if base.cuda else None
        if release:
            found = {(release.group(1), cuda, f"torch {release.group(1)} of {root.base}")}
    python = None if other_python else _python(root)
    if len(found) != 1:
        return Stack(None, None, python, "")
    torch, cuda, shown = found.pop()
    return Stack(torch, cuda, python, shown)


def _python(root: Stage) -> str | None:
    """The CPython of an official python:X.Y base."""
    reference = image_reference(root)
    if reference is None or reference.name not in ("library/python", "python"):
        return None
    match = _PYTHON_TAG.match(reference.tag or "")
    return match.group(1) if match else None


def _installs_python(command: Command) -> bool:
    """uv/conda/pyenv or an OS package bringing another interpreter (`python3.10`)."""
    argv = command.argv
    if command.name == "uv" and ("venv" in argv or ("python" in argv and "install" in argv)):
        return True
    if command.name in ("conda", "mamba", "micromamba") and any(
        a.startswith("python=") or a.startswith("python>") for a in argv
    ):
        return True
    if command.name == "pyenv" and "install" in argv:
        return True
    install = os_install(command)
    return install is not None and any(_PYTHON_PACKAGE.match(w.text) for w in install.packages)


def _mismatch(build: WheelBuild, stack: Stack) -> str | None:
    """What the wheel was built for that the image does not have, as a sentence."""
    name = build.project
    if build.python and stack.python and build.python != stack.python:
        return (
            f"the {name} wheel is built for CPython {build.python}, the image's Python is "
            f"{stack.python}: pip refuses it ('is not a supported wheel on this platform')"
        )
    if build.torch and stack.torch and build.torch != stack.torch:
        return (
            f"the {name} wheel is built against torch {build.torch}, the image has "
            f"{stack.torch_from}: its compiled extension fails to load (undefined symbol)"
        )
    if build.cuda and stack.cuda and Version.parse(build.cuda).major != stack.cuda.major:
        return (
            f"the {name} wheel is built for CUDA {build.cuda}, the image's torch uses CUDA "
            f"{stack.cuda} ({stack.torch_from}): its kernels need a CUDA runtime the image "
            "does not load"
        )
    return None
