"""GSL511: binary wheels built for another torch, CUDA major or Python than the image has.

Compiled extensions (flash-attn, flashinfer, xformers, vLLM...) are built against one torch
release, one CUDA major and one CPython; their wheel file names say which
(`flash_attn-2.7.4+cu12torch2.6cxx11abiFALSE-cp311-cp311-linux_x86_64.whl`, Dao-AILab/
flash-attention setup.py `get_wheel_url`), and so do flashinfer's per-build indexes
(`https://flashinfer.ai/whl/cu124/torch2.4/`); for xformers installed by version, the
knowledge base records the torch each release is built for. pip checks only the Python tag: a
wheel for another torch or CUDA installs fine and fails at import with an undefined symbol or a
CUDA runtime that is not there. What the image installs comes from the same stage chain: a
pinned torch (its CUDA from its index or the knowledge base's PyPI default), the range an
unpinned torch is installed with (pip picks a release within it), a pytorch/pytorch base tag,
and the Python of an official python:X.Y base or of an Ubuntu base whose `python3` the chain
installs with apt. Anything else is unknown and not judged.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from gpuship.cuda.packages import os_python, torch_built_for
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
# apt packages that install the OS's own `python3` (and nothing else of another version).
_OS_PYTHON3 = frozenset(
    {"python3", "python3-pip", "python3-dev", "python3-venv", "python-is-python3"}
)
# An Ubuntu release in a base image: `ubuntu:22.04`, nvidia/cuda's `...-ubuntu22.04`.
_UBUNTU_TAG = re.compile(r"(?:^|-)ubuntu(\d\d\.\d\d)(?:$|-)")


@dataclass(frozen=True)
class TorchFacts:
    """A torch a RUN installs, as the wheel check needs it."""

    run: Run
    release: str | None  # "2.6" when pinned to one release
    cuda: Version | None  # the CUDA it bundles, when known
    shown: str  # how to name it in a message
    specifier: str = ""  # the range an unpinned torch is installed with (`>=2.5`)


@dataclass(frozen=True)
class Stack:
    """What a stage chain gives compiled extensions: torch (major.minor), CUDA, Python."""

    torch: str | None
    cuda: Version | None
    python: str | None
    torch_from: str  # where the torch facts come from, for the message
    admits: str = ""  # an unpinned torch's range: the release pip picks is within it


@dataclass(frozen=True)
class _Built:
    """A binary a command installs and what it was built for."""

    word: Word
    build: WheelBuild
    label: str  # "the flash_attn wheel", "xformers 0.0.28.post1"
    # The torch release the knowledge base records it is built for (its name says none).
    recorded: Version | None = None


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
            for built in builds:
                problem = _mismatch(built, stacks[run.stage.index])
                if problem is not None:
                    yield at_word("GSL511", problem, run, command, built.word)


def _wheels(run: Run, command: Command, install: PythonInstall) -> Iterator[_Built]:
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
                yield _Built(spec.word, build, f"the {build.project} wheel")
        elif flashinfer is not None and spec.name.startswith("flashinfer"):
            yield _Built(spec.word, flashinfer, "the flashinfer wheel")
        elif spec.kind == "name" and spec.version is not None:
            torch = torch_built_for(spec.name, spec.version)
            if torch is not None:
                build = WheelBuild(spec.name, None, str(torch.major_minor()), None)
                yield _Built(spec.word, build, f"{spec.name} {spec.version}", recorded=torch)


_Facts = tuple[str | None, Version | None, str, str]  # torch x.y, its CUDA, shown, range


def _stacks(analysis: Analysis, torches: list[TorchFacts]) -> dict[int, Stack]:
    """torch, CUDA and Python of each stage the target builds, from its whole FROM chain (a
    torch installed before or after a wheel is the image's torch all the same). One pass over
    the stages, each starting from its parent's: a chain of a thousand stages that each
    install a wheel is not walked once per stage."""
    own: dict[int, set[_Facts]] = {}
    for torch in torches:
        facts = (torch.release, torch.cuda, torch.shown, torch.specifier)
        own.setdefault(torch.run.stage.index, set()).add(facts)
    found_by_stage: dict[int, frozenset[_Facts]] = {}
    other_python: dict[int, bool] = {}  # the chain installs another Python
    os_python3: dict[int, bool] = {}  # the chain installs the OS's python3
    stacks: dict[int, Stack] = {}
    for stage in analysis.reachable_stages:  # a parent always comes earlier in the file
        parent = stage.parent
        found = found_by_stage.get(parent, frozenset()) if parent is not None else frozenset()
        # Two different facts make the stack ambiguous, however many more there are.
        found = frozenset(list(found | own.get(stage.index, set()))[:2])
        found_by_stage[stage.index] = found
        commands = [c for run in analysis.runs_of(stage) for c in run.commands]
        inherited = parent is not None and other_python.get(parent, False)
        other_python[stage.index] = inherited or any(_installs_python(c) for c in commands)
        inherited = parent is not None and os_python3.get(parent, False)
        os_python3[stage.index] = inherited or any(_installs_os_python3(c) for c in commands)
        python = None
        if not other_python[stage.index]:
            python = _python(analysis.build.root_base(stage), os_python3[stage.index])
        stacks[stage.index] = _stack(analysis, stage, found, python)
    return stacks


def _stack(analysis: Analysis, stage: Stage, facts: frozenset[_Facts], python: str | None) -> Stack:
    """torch and CUDA of `stage`'s chain, each None when unknown or ambiguous."""
    found = set(facts)
    root = analysis.build.root_base(stage)
    base = base_cuda(root)
    if not found and base is not None and base.source == "pytorch/pytorch":
        reference = image_reference(root)
        tag = reference.tag if reference and reference.tag else ""
        release = re.match(r"^(\d+\.\d+)", tag)
        cuda = Version.parse(base.cuda) if base.cuda else None
        if release:
            found = {(release.group(1), cuda, f"torch {release.group(1)} of {root.base}", "")}
    if len(found) != 1:
        return Stack(None, None, python, "")
    torch, cuda, shown, specifier = found.pop()
    return Stack(torch, cuda, python, shown, specifier if torch is None else "")


def _python(root: Stage, os_python3: bool) -> str | None:
    """The CPython of an official python:X.Y base, or of an Ubuntu base whose chain installs
    its `python3` (nvidia/cuda images and plain ubuntu ship none)."""
    reference = image_reference(root)
    if reference is None:
        return None
    if reference.name in ("library/python", "python"):
        match = _PYTHON_TAG.match(reference.tag or "")
        return match.group(1) if match else None
    if not os_python3:
        return None
    tag = reference.tag or ""
    if reference.name in ("library/ubuntu", "ubuntu"):
        release = re.match(r"^(\d\d\.\d\d)(?:$|-)", tag)
    else:
        release = _UBUNTU_TAG.search(tag) if base_cuda(root) is not None else None
    return os_python("ubuntu", release.group(1)) if release else None


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


def _installs_os_python3(command: Command) -> bool:
    install = os_install(command)
    return (
        install is not None
        and install.manager == "apt"
        and any(w.text in _OS_PYTHON3 for w in install.packages)
    )


def _mismatch(built: _Built, stack: Stack) -> str | None:
    """What the wheel was built for that the image does not have, as a sentence."""
    build, label = built.build, built.label
    if build.python and stack.python and build.python != stack.python:
        return (
            f"{label} is built for CPython {build.python}, the image's Python is "
            f"{stack.python}: pip refuses it ('is not a supported wheel on this platform')"
        )
    failure = "its compiled extension fails to load (undefined symbol)"
    against = f"{label} is built against torch {build.torch}"
    if built.recorded is not None:
        failure = (
            "its C++/CUDA extensions load only with the torch they were built for "
            "(xFormers: 'can't load C++/CUDA extensions')"
        )
        against = f"{label} is built against torch {built.recorded} (gpuship's knowledge base)"
    if build.torch and stack.torch and build.torch != stack.torch:
        return f"{against}, the image has {stack.torch_from}: {failure}"
    if build.torch and stack.admits and not _admits(stack.admits, build.torch):
        return (
            f"{against}, but `torch{stack.admits}` admits no torch {build.torch}: pip "
            f"installs another release ({stack.torch_from}), and {failure}"
        )
    if build.cuda and stack.cuda and Version.parse(build.cuda).major != stack.cuda.major:
        return (
            f"{label} is built for CUDA {build.cuda}, the image's torch uses CUDA "
            f"{stack.cuda} ({stack.torch_from}): its kernels need a CUDA runtime the image "
            "does not load"
        )
    return None


def _admits(specifier: str, release: str) -> bool:
    """Whether a torch range admits any release of `release` (major.minor): any patch of it."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        allowed = SpecifierSet(specifier)
    except InvalidSpecifier:
        return True  # unreadable: not claimed
    return any(allowed.contains(f"{release}.{patch}", prereleases=True) for patch in range(100))
