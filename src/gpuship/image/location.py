"""Turn the IMAGE argument into the adapter that reads it."""

from __future__ import annotations

from pathlib import Path

from gpuship.errors import InputError
from gpuship.image.source import ImageSource
from gpuship.registry.access import RegistryAccess

DOCKER_PREFIX = "docker://"
REGISTRY_PREFIX = "registry://"
ARCHIVE_PREFIX = "docker-archive:"
OCI_PREFIX = "oci:"


def _split_oci(text: str) -> tuple[Path, str | None]:
    """`oci:PATH[:TAG]`: the longest prefix that is a directory is the path."""
    if Path(text).is_dir():
        return Path(text), None
    path, sep, tag = text.rpartition(":")
    if sep and path and Path(path).is_dir():
        return Path(path), tag
    raise InputError(f"oci:{text}: no OCI layout directory there")


def open_source(
    text: str,
    *,
    access: RegistryAccess | None = None,
) -> ImageSource:
    """The adapter for the IMAGE argument.

    `REF` or `registry://REF`, `docker://REF`, `docker-archive:PATH`, `oci:PATH[:TAG]`.
    `access` reaches registries, names the engine's environment, and its `limits` bound what
    is read from any source.
    """
    access = access or RegistryAccess()
    limits = access.limits
    text = text.strip()
    if not text:
        raise InputError("no image given")
    if text.startswith(DOCKER_PREFIX):
        from gpuship.image.sources.docker_engine import DockerEngineSource

        return DockerEngineSource(text[len(DOCKER_PREFIX) :], access.environ, limits)
    if text.startswith(ARCHIVE_PREFIX):
        from gpuship.image.sources.docker_archive import DockerArchiveSource

        return DockerArchiveSource(Path(text[len(ARCHIVE_PREFIX) :]), limits)
    if text.startswith(OCI_PREFIX):
        from gpuship.image.sources.oci_layout import OciLayoutSource

        path, tag = _split_oci(text[len(OCI_PREFIX) :])
        return OciLayoutSource(path, tag, limits)
    from gpuship.image.sources.registry import RegistrySource

    if text.startswith(REGISTRY_PREFIX):
        text = text[len(REGISTRY_PREFIX) :]
    return RegistrySource(text, access)
