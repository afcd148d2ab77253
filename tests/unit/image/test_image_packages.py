"""Installed packages read from an image's files: pip and conda by name, dpkg from its status."""

from __future__ import annotations

import dataclasses
import io
import tarfile
from pathlib import Path

import pytest

from gpuship.image import paths
from gpuship.image.layerscan import scan_layer
from gpuship.image.overlay import VisibleFile
from gpuship.image.packages import InstalledPackage, dpkg_packages, installed_packages
from gpuship.limits import DEFAULT_LIMITS


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (
            "usr/local/lib/python3.11/site-packages/torch-2.4.0+cu124.dist-info/RECORD",
            ("usr/local/lib/python3.11/site-packages", "torch", "2.4.0+cu124"),
        ),
        (
            "venv/lib/python3.10/site-packages/zope.interface-6.0-py3.10.egg-info/PKG-INFO",
            ("venv/lib/python3.10/site-packages", "zope.interface", "6.0"),
        ),
        (
            "usr/lib/python3/dist-packages/six-1.16.0.egg-info",
            ("usr/lib/python3/dist-packages", "six", "1.16.0"),
        ),
        ("usr/local/lib/python3.11/site-packages/torch/version.py", None),
        ("srv/not-packages/foo-1.0.dist-info/METADATA", None),
    ],
)
def test_pip_distribution(path: str, expected: tuple[str, str, str] | None) -> None:
    assert paths.pip_distribution(path) == expected


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (
            "opt/conda/conda-meta/numpy-1.26.4-py311h64a7726_0.json",
            ("opt/conda", "numpy", "1.26.4"),
        ),
        ("conda-meta/libgcc-ng-13.2.0-h77fa898_7.json", ("/", "libgcc-ng", "13.2.0")),
        ("opt/conda/conda-meta/history", None),
        ("opt/conda/conda-meta/broken.json", None),
    ],
)
def test_conda_package(path: str, expected: tuple[str, str, str] | None) -> None:
    assert paths.conda_package(path) == expected


def test_dpkg_status_installed_only() -> None:
    status = (
        "Package: libc6\nStatus: install ok installed\nVersion: 2.35-0ubuntu3.8\n"
        "Description: GNU C Library\n Contains: the words Version: 9\n\n"
        "Package: old\nStatus: deinstall ok config-files\nVersion: 1.0\n\n"
        "Package: half\nStatus: install reinstreq half-installed\nVersion: 2.0\n\n"
        "Package: cuda-cudart-12-4\nStatus: install ok installed\nVersion: 12.4.127-1\n"
    )
    assert dpkg_packages(status) == (
        InstalledPackage("dpkg", "libc6", "2.35-0ubuntu3.8", "/"),
        InstalledPackage("dpkg", "cuda-cudart-12-4", "12.4.127-1", "/"),
    )


def test_pip_names_are_normalised_and_environments_kept_apart() -> None:
    files = [
        VisibleFile(f"{site}/{name}.dist-info/METADATA", "file", 10, 0)
        for site, name in (
            ("usr/lib/python3/dist-packages", "Flask_Cors-4.0.1"),
            ("opt/venv/lib/python3.11/site-packages", "flask_cors-5.0.0"),
        )
    ]
    assert {(p.name, p.version, p.environment) for p in installed_packages(files, {})} == {
        ("flask-cors", "4.0.1", "/usr/lib/python3/dist-packages"),
        ("flask-cors", "5.0.0", "/opt/venv/lib/python3.11/site-packages"),
    }


def _layer(data: bytes) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        info = tarfile.TarInfo(paths.DPKG_STATUS)
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


@pytest.mark.parametrize(("extra", "kept"), [(0, True), (1, False)])
def test_dpkg_status_at_and_past_its_limit(tmp_path: Path, extra: int, kept: bool) -> None:
    status = b"Package: a\nStatus: install ok installed\nVersion: 1\n"
    limits = dataclasses.replace(DEFAULT_LIMITS, package_db_max_bytes=len(status) - extra)
    layer = _layer(status)
    scan = scan_layer(
        io.BytesIO(layer), index=0, digest=None, size=None, tmpdir=tmp_path, limits=limits
    )
    assert (paths.DPKG_STATUS in scan.texts) is kept
    assert len(scan.entries) == 1
