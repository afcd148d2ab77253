"""Which torch CUDA variant an install gets from the indexes it reads.

pip reads every index it is given (`--index-url`, each `--extra-index-url`, the
requirements file's own, PIP_INDEX_URL, the space-separated PIP_EXTRA_INDEX_URL) and takes the
highest matching version of all: for `torch==2.6.0` a `+cu126` build of one index beats PyPI's
plain 2.6.0, and an index without 2.6.0 is simply passed over. So a variant is missing (GSL501)
only when no index read has the release, and when several variants could supply it and
disagree, which one the image gets is unknown: nothing is claimed about it (GSL501, GSL502 and
GSL503 all read the one answer given here). uv stops at the first index that lists torch
(`first-index`); its order between command line and environment is not modelled, so indexes
that disagree leave the variant unknown there too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuship.cuda.errors import InvalidVersion, UnknownVersion
from gpuship.cuda.torch import Availability, TorchRelease, cuda_of_variant, torch_release
from gpuship.lint.analysis import FileSpec
from gpuship.lint.packages import PythonInstall
from gpuship.lint.shell import expand_shell
from gpuship.lint.stages import Env

INDEX_VARIANT = re.compile(r"/whl/(?:nightly/|test/)?(cu\d+|cpu|rocm[\d.]+|xpu)\b")
_PRIMARY_ENV = {"pip": ("PIP_INDEX_URL",), "uv": ("UV_INDEX_URL", "UV_DEFAULT_INDEX")}
_EXTRA_ENV = {"pip": ("PIP_EXTRA_INDEX_URL",), "uv": ("UV_EXTRA_INDEX_URL", "UV_INDEX")}


@dataclass(frozen=True)
class Index:
    """One index URL an install reads that names a torch variant."""

    text: str  # as written (an option's value, a variable's value, `--torch-backend`'s)
    variant: str  # "cu126", "cpu", ...
    extra: bool  # added beside the primary index (pip merges it with the primary's packages)


@dataclass(frozen=True)
class Resolved:
    """The variant an install gets: `variant` None is PyPI's default build, unless `unknown`."""

    variant: str | None
    chosen_by: str | None  # the index text that chose it
    # Several variants may supply it, or none (the install fails): no variant to judge.
    unknown: bool = False
    # When no index read has the pinned release: the indexes known to lack it.
    missing: tuple[Index, ...] = ()
    pypi: bool = False  # PyPI competes with the variant indexes (pip's extra indexes)
    extra: bool = False  # the chosen index is an extra one (merged with PyPI)
    candidates: tuple[str, ...] = ()  # the variants that may supply it when unknown


PYPI_DEFAULT = Resolved(None, None)  # no variant index: PyPI's default build


def resolve(
    install: PythonInstall, env: Env, file: FileSpec | None, version: str | None
) -> Resolved:
    """The variant `install` gets for torch `version` (None: unpinned) from its indexes."""
    indexes, backend_unknown = _indexes(install, env, file)
    if backend_unknown:  # `--torch-backend auto`: chosen from the build machine's driver
        return Resolved(None, None, unknown=True)
    variants = list(dict.fromkeys(i.variant for i in indexes))
    if not variants:
        return PYPI_DEFAULT
    pypi = _pypi_competes(install, env, indexes)
    release = release_of(version)
    missing = tuple(i for i in indexes if _availability(release, i.variant) is Availability.ABSENT)
    if install.tool == "uv" and not pypi:
        # uv's first index that lists torch decides, with or without the version.
        if len(variants) > 1:
            return Resolved(None, None, unknown=True, candidates=tuple(variants))
        if missing:
            return Resolved(None, None, unknown=True, missing=missing)  # uv fails
        return Resolved(indexes[0].variant, indexes[0].text)
    absent = {i.variant for i in missing}
    possible = [v for v in variants if v not in absent]  # pip passes over the others
    if len(possible) == 1:
        index = next(i for i in indexes if i.variant == possible[0])
        return Resolved(index.variant, index.text, pypi=pypi, extra=index.extra and pypi)
    if possible:
        return Resolved(None, None, unknown=True, pypi=pypi, candidates=tuple(possible))
    if pypi:  # no variant index has the release: PyPI's build of it
        return Resolved(None, None, missing=missing, pypi=True)
    # The install fails: no torch lands, so no rule judges a variant of it.
    return Resolved(None, None, unknown=True, missing=missing)


def _indexes(install: PythonInstall, env: Env, file: FileSpec | None) -> tuple[list[Index], bool]:
    """Every variant index the install reads, and whether uv's torch backend is chosen at build
    time (`auto`)."""
    tool = install.tool
    found: list[tuple[str, str, bool]] = []
    primary_on_line = False
    for word in install.index_urls:
        is_extra = word in install.extra_index_urls
        primary_on_line |= not is_extra
        found.append((word.text, word.text, is_extra))
    if file is not None:
        primary = set(file.primary_index_urls)
        found.extend((url, url, url not in primary) for url in file.index_urls)
    backend = _torch_backend(install, env)
    if backend is not None:
        found.append((backend, "/whl/" + backend, False))
    # An index option on the command line overrides its variable (pip and uv alike); the
    # variables' lists are space separated.
    if not primary_on_line:
        for name in _PRIMARY_ENV.get(tool, ()):
            found.extend((v, v, False) for v in _env_list(env, name))
    for name in _EXTRA_ENV.get(tool, ()):
        found.extend((v, v.split("=", 1)[-1], True) for v in _env_list(env, name))
    indexes = []
    for text, url, is_extra in found:
        # An index URL computed in the shell (`.../whl/cu$(echo $CUDA | tr -d .)`) too.
        match = INDEX_VARIANT.search(expand_shell(url, env)[0])
        if match:
            indexes.append(Index(text, match.group(1), is_extra))
    unknown = backend is not None and not INDEX_VARIANT.search("/whl/" + backend)
    return indexes, unknown


def _torch_backend(install: PythonInstall, env: Env) -> str | None:
    argv = install.command.argv
    for position, arg in enumerate(argv):
        if arg == "--torch-backend" and position + 1 < len(argv):
            return argv[position + 1]
        if arg.startswith("--torch-backend="):
            return arg.split("=", 1)[1]
    return env.get("UV_TORCH_BACKEND") if install.tool == "uv" else None


def _env_list(env: Env, name: str) -> list[str]:
    return (env.get(name) or "").split()


def _pypi_competes(install: PythonInstall, env: Env, indexes: list[Index]) -> bool:
    """True when PyPI (or a mirror) is the primary index and pip merges the variant indexes
    with it: pip always, uv only with `--index-strategy unsafe-best-match`."""
    if install.tool == "uv":
        argv = install.command.argv
        strategy = env.get("UV_INDEX_STRATEGY")
        for position, arg in enumerate(argv):
            if arg == "--index-strategy" and position + 1 < len(argv):
                strategy = argv[position + 1]
            elif arg.startswith("--index-strategy="):
                strategy = arg.split("=", 1)[1]
        if strategy != "unsafe-best-match":
            return False
    elif install.tool != "pip":
        return False
    return not any(not i.extra for i in indexes)


def release_of(version: str | None) -> TorchRelease | None:
    """The knowledge base's row for torch `version`, None when unpinned or unknown."""
    if version is None:
        return None
    try:
        return torch_release(version)
    except (UnknownVersion, InvalidVersion):
        return None


def _availability(release: TorchRelease | None, variant: str) -> Availability:
    """Whether `release` has `variant`; unknown without a release, or for CPU/ROCm builds."""
    if release is None or not variant.startswith("cu"):
        return Availability.UNKNOWN
    try:
        return release.availability(cuda_of_variant(variant))
    except InvalidVersion:
        return Availability.UNKNOWN
