"""The packages installed in an image's final filesystem: pip, dpkg and conda. Pure.

Read from what `inspect` already has: pip and conda from file names (a distribution's
`*.dist-info` directory and conda's `conda-meta/*.json` name the package and its version),
dpkg from `var/lib/dpkg/status`, the one file whose content the layer scan keeps for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from packaging.utils import canonicalize_name

from gpuship.image import paths
from gpuship.image.overlay import VisibleFile

PIP, DPKG, CONDA = "pip", "dpkg", "conda"


@dataclass(frozen=True, order=True)
class InstalledPackage:
    """One installed package: its manager, name (pip's normalised), version, environment.

    `environment` tells two copies apart: the `site-packages` directory for pip, the
    environment's root for conda, `/` for dpkg.
    """

    manager: str
    name: str
    version: str
    environment: str


def installed_packages(
    files: Iterable[VisibleFile], texts: Mapping[str, str]
) -> tuple[InstalledPackage, ...]:
    """Every package the final filesystem shows, sorted, each once."""
    found: set[InstalledPackage] = set()
    for item in files:
        pip = paths.pip_distribution(item.path)
        if pip is not None:
            where, name, version = pip
            # Metadata directory names escape `-` as `_`; PEP 503 names compare equal.
            found.add(InstalledPackage(PIP, canonicalize_name(name), version, "/" + where))
            continue
        conda = paths.conda_package(item.path)
        if conda is not None:
            where, name, version = conda
            found.add(InstalledPackage(CONDA, name, version, "/" + where.lstrip("/")))
    status = texts.get(paths.DPKG_STATUS)
    if status is not None:
        found.update(dpkg_packages(status))
    return tuple(sorted(found))


def dpkg_packages(status: str) -> tuple[InstalledPackage, ...]:
    """The packages dpkg's status file marks installed (`Status: install ok installed`).

    The file is deb822 paragraphs (deb-status(5)); only the three single-line fields gpuship
    reads are parsed, so python-debian, a whole parser of Debian formats, is not a dependency.
    """
    packages = []
    for paragraph in status.split("\n\n"):
        fields: dict[str, str] = {}
        for line in paragraph.splitlines():
            if line[:1].isspace() or ":" not in line:
                continue  # a continuation line of a multi-line field (Description...)
            key, _, value = line.partition(":")
            fields[key.strip().lower()] = value.strip()
        name, version = fields.get("package"), fields.get("version")
        state = fields.get("status", "").split()
        if name and version and state[-1:] == ["installed"]:
            packages.append(InstalledPackage(DPKG, name, version, "/"))
    return tuple(packages)
