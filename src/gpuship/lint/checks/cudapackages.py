"""GSL509 beyond apt: CUDA-bound packages other than torch built for another CUDA than the base
image's, and cuDNN of another major than the image's, installed by apt, conda or pip.

Which CUDA and cuDNN a package needs comes from `gpuship.cuda.packages`: names that state it
(`cupy-cuda12x`, `nvidia-cudnn-cu11`, `tensorrt-cu12`, `jax[cuda12]`, `paddlepaddle-gpu==
2.6.1.post120`) and the knowledge base's release rows (`onnxruntime-gpu`, `tensorflow`), which
hold for PyPI's builds only: an install that reads another index is unknown. What the image's
cuDNN is comes from the base tag (`cudnn9`) or the cuDNN torch's PyPI wheel pins.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from gpuship.cuda.packages import KNOWLEDGE_BASE, PackageCuda, package_cuda
from gpuship.cuda.version import Version
from gpuship.lint.analysis import Analysis, FileSpec, Run
from gpuship.lint.checks.base import Hit, at_spec, final_runs, reachable_runs
from gpuship.lint.checks.cudabase import base_cuda
from gpuship.lint.packages import PythonInstall, Spec, os_install
from gpuship.lint.shell import Command, Word
from gpuship.lint.stages import Env, expand

# apt cuDNN packages and their major: libcudnn8, libcudnn8-dev, libcudnn9-cuda-12, cudnn9-cuda-12.
_APT_CUDNN = re.compile(r"^(?:lib)?cudnn(\d+)(?:[-=]|$)")
# A conda cuDNN pinned to a major: `cudnn=8.9`, `cudnn==8.9.2.26`, `cudnn=8.*`.
_CONDA_CUDNN = re.compile(r"^(?:[\w.-]+::)?cudnn\s*==?\s*(\d+)(?:[.*=]|$)")
_TOOLS = ("pip", "uv", "conda")  # the installers whose packages are judged
# Variables that point pip or uv at another index than PyPI (or add one).
_INDEX_VARIABLES = (
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_FIND_LINKS",
    "UV_INDEX_URL",
    "UV_EXTRA_INDEX_URL",
    "UV_INDEX",
    "UV_DEFAULT_INDEX",
    "UV_FIND_LINKS",
)


@dataclass(frozen=True)
class _Spot:
    """Where a package is named: a word of a command, or a line of a file it installs from."""

    run: Run
    command: Command
    word: Word | None
    file: FileSpec | None = None
    file_path: Path | None = None

    def hit(self, message: str) -> Hit:
        return at_spec(
            "GSL509", message, self.run, self.command, self.word, self.file, self.file_path
        )


@dataclass(frozen=True)
class _Installed:
    """A package pip, uv or conda installs."""

    spot: _Spot
    spec: Spec
    manager: str  # "pip" (pip and uv) or "conda"
    pypi_only: bool  # pip read PyPI alone: the knowledge base's rows hold

    @property
    def needs(self) -> PackageCuda | None:
        """The CUDA and cuDNN it needs, when its name or (for PyPI's builds) gpuship knows."""
        if self.manager != "pip":
            return None
        found = package_cuda(self.spec.name, self.spec.version, self.spec.extras)
        if found is None or (found.known_from == KNOWLEDGE_BASE and not self.pypi_only):
            return None
        return found

    @property
    def cudnn(self) -> int | None:
        """The cuDNN major a conda `cudnn=N...` installs."""
        match = _CONDA_CUDNN.match(self.spec.text) if self.manager == "conda" else None
        return int(match.group(1)) if match else None


def check(analysis: Analysis, stacks: dict[int, str]) -> Iterator[Hit]:
    """GSL509 for pip/conda packages: built for another CUDA major than the base image's, or
    bringing (or needing) a cuDNN major the image's `stacks` (major -> what brings it) lack."""
    yield from _other_cuda(analysis)
    yield from _cudnn(analysis, stacks)


def _other_cuda(analysis: Analysis) -> Iterator[Hit]:
    """A CUDA-bound package of another CUDA major than its stage's base image."""
    for installed in _python_installs(analysis, reachable_runs(analysis)):
        needs = installed.needs
        if needs is None:
            continue
        root = analysis.build.root_base(installed.spot.run.stage)
        base = base_cuda(root)
        if base is None or base.cuda is None:
            continue
        base_version = Version.parse(base.cuda)
        if needs.cuda.major == base_version.major:
            continue
        text = installed.spec.text
        if needs.bundled:
            message = (
                f"{text} installs CUDA {needs.cuda} libraries from pip (as {needs.known_from} "
                f"says) on the CUDA {base.cuda} base image {root.base}: two CUDA stacks in one "
                "image"
            )
            if needs.cuda.major > base_version.major:
                message += f", and the driver must support CUDA {needs.cuda.major}"
        else:
            message = (
                f"{text} is built for CUDA {needs.cuda} (as {needs.known_from} says) and loads "
                f"the CUDA {needs.cuda.major} libraries of the system, but the base image "
                f"{root.base} has CUDA {base.cuda}: without CUDA {needs.cuda.major} libraries "
                "beside them it cannot use the GPU"
            )
        yield installed.spot.hit(message)


def _cudnn(analysis: Analysis, stacks: dict[int, str]) -> Iterator[Hit]:
    """cuDNN of a major the image's stack lacks: installed (a second cuDNN that only software
    built for it loads), or needed by a package that then cannot load it. A cuDNN install a
    package of the image needs is no waste, and a package whose cuDNN is installed is served."""
    if not stacks:
        return
    installs: list[tuple[int, _Spot, str]] = []  # major, where, what installs it
    needs: list[tuple[int, _Installed]] = []
    for run in final_runs(analysis):
        for command in run.commands:
            for word, major in _os_cudnn(command, run.env_at(command)):
                installs.append((major, _Spot(run, command, word), word.text))
    for installed in _python_installs(analysis, final_runs(analysis)):
        found = installed.needs
        if installed.cudnn is not None:
            installs.append((installed.cudnn, installed.spot, installed.spec.text))
        elif found is not None and found.cudnn_major is not None:
            if found.bundled:
                installs.append((found.cudnn_major, installed.spot, installed.spec.text))
            else:
                needs.append((found.cudnn_major, installed))
    installed_majors = {major for major, _, _ in installs}
    needed_majors = {major for major, _ in needs}
    major, owner = next(iter(stacks.items()))
    for found_major, spot, text in installs:
        if found_major not in stacks and found_major not in needed_majors:
            yield spot.hit(
                f"{text} installs cuDNN {found_major} beside the cuDNN {major} of {owner}: "
                f"two cuDNN majors in the image, hundreds of MB that only software built for "
                f"cuDNN {found_major} loads"
            )
    for found_major, installed in needs:
        if found_major not in stacks and found_major not in installed_majors:
            yield installed.spot.hit(
                f"{installed.spec.text} loads cuDNN {found_major} (as gpuship's knowledge base "
                f"says), but the image's cuDNN is {major} ({owner}) and nothing installs "
                f"cuDNN {found_major}: its GPU code does not load"
            )


def _os_cudnn(command: Command, env: Env) -> Iterator[tuple[Word, int]]:
    """The cuDNN packages an apt install names, with their major."""
    install = os_install(command)
    if install is None or install.manager != "apt":
        return
    for word in install.packages:
        match = _APT_CUDNN.match(expand(word.text, env)[0])
        if match is not None:
            yield word, int(match.group(1))


def _python_installs(analysis: Analysis, runs: Iterable[Run]) -> Iterator[_Installed]:
    """Each named package pip, uv or conda installs in `runs`: on the command line, from a
    requirements file, or from a conda environment file (its conda and pip sections)."""
    for run in runs:
        for command in run.commands:
            for item in analysis.requested(run, command):
                spec, install = item.spec, item.install
                if spec.kind != "name" or not spec.name or install.tool not in _TOOLS:
                    continue
                word = spec.word if item.file is None else None
                spot = _Spot(run, command, word, item.file, item.file_path)
                pypi = _pypi_only(install, run.env_at(command)) and not (
                    item.file and item.file.index_urls
                )
                yield _Installed(spot, spec, "conda" if install.tool == "conda" else "pip", pypi)


def _pypi_only(install: PythonInstall, env: Env) -> bool:
    """True when pip/uv read PyPI alone: no index option, and no variable that sets one."""
    if install.index_urls:
        return False
    return all(name not in env for name in _INDEX_VARIABLES)
