"""Images in a `docker save` tarball (`docker-archive:PATH`), read in place by member offset.

Both layouts `docker save` writes are read through `manifest.json`: the legacy one
(`<id>/layer.tar`, `<hex>.json`) and the OCI one of Docker 25+ (`blobs/sha256/<hex>`). Layer
members may be symlinks to another layer's member (legacy de-duplication).
"""

from __future__ import annotations

import hashlib
import io
import os
import posixpath
import re
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gpuship.documents import load_json, open_regular
from gpuship.errors import InputError
from gpuship.image.blobstream import GZIP_MAGIC
from gpuship.image.source import (
    BlobRef,
    ImageSource,
    Platform,
    ResolvedImage,
    check_digest,
    invalid_document,
    parse_config,
)
from gpuship.image.tarwalk import HARDLINK, REGULAR, SYMLINK, TarFormatError, TarWalker
from gpuship.limits import DEFAULT_LIMITS, Limits

_BLOB_NAME = re.compile(r"^blobs/(?P<alg>sha256|sha512)/(?P<hex>[0-9a-f]+)$")
_LEGACY_CONFIG = re.compile(r"^(?P<hex>[0-9a-f]{64})\.json$")
_MAX_LINK_HOPS = 8
LAYER_MEDIA_TYPE = "application/vnd.docker.image.rootfs.diff.tar"


class ArchiveEntry(BaseModel):
    """One image in a `docker save` manifest.json."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, frozen=True)

    config: str = Field(alias="Config")
    repo_tags: list[str] | None = Field(default=None, alias="RepoTags")
    layers: list[str] = Field(alias="Layers")


@dataclass(frozen=True)
class _Member:
    offset: int
    size: int
    is_link: bool
    target: str


def digest_of_member(name: str) -> str | None:
    """`sha256:<hex>` when the member is content-addressed, else None."""
    match = _BLOB_NAME.match(name)
    if match:
        return f"{match['alg']}:{match['hex']}"
    match = _LEGACY_CONFIG.match(name)
    return f"sha256:{match['hex']}" if match else None


class _Slice(io.RawIOBase):
    """A byte range of the archive read with pread, so layers can be read in parallel."""

    def __init__(self, path: Path, offset: int, size: int) -> None:
        super().__init__()
        self._fd = os.open(path, os.O_RDONLY)
        self._position = offset
        self._end = offset + size

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        want = min(len(view), self._end - self._position)
        if want <= 0:
            return 0
        data = os.pread(self._fd, want, self._position)
        view[: len(data)] = data
        self._position += len(data)
        return len(data)

    def close(self) -> None:
        if not self.closed:
            os.close(self._fd)
        super().close()


class DockerArchiveSource(ImageSource):
    """A `docker save` tarball holding one image."""

    kind = "docker-archive"

    def __init__(self, path: Path, limits: Limits = DEFAULT_LIMITS) -> None:
        self._path = path
        self._where = f"docker-archive:{path}"
        self._limits = limits
        if path.is_dir():
            hint = " (an OCI layout: use oci:PATH)" if (path / "index.json").exists() else ""
            raise InputError(
                f"{self._where}: is a directory; docker-archive: reads the tar file "
                f"`docker save` writes{hint}"
            )
        self._members = self._index()

    def _index(self) -> dict[str, _Member]:
        members: dict[str, _Member] = {}
        try:
            with open_regular(self._path, "archive") as handle:
                if handle.read(2) == GZIP_MAGIC:
                    raise InputError(
                        f"{self._where}: is gzip-compressed; "
                        "gunzip a `docker save | gzip` file first"
                    )
                handle.seek(0)
                walker = TarWalker(handle, max_metadata_bytes=self._limits.tar_header_max_bytes)
                for member in walker.members():
                    name = posixpath.normpath(member.name).lstrip("/")
                    if member.kind in (SYMLINK, HARDLINK):
                        target = member.linkname
                        if member.kind == SYMLINK:
                            target = posixpath.join(posixpath.dirname(name), target)
                        members[name] = _Member(0, 0, True, posixpath.normpath(target).lstrip("/"))
                    elif member.kind == REGULAR:
                        members[name] = _Member(walker.offset, member.size, False, "")
        except TarFormatError as error:
            raise InputError(f"{self._where}: not a docker save archive: {error}") from None
        return members

    def _member(self, name: str) -> tuple[str, _Member]:
        name = posixpath.normpath(name).lstrip("/")
        for _ in range(_MAX_LINK_HOPS):
            member = self._members.get(name)
            if member is None:
                raise InputError(f"{self._where}: member {name} is missing")
            if not member.is_link:
                return name, member
            name = member.target
        raise InputError(f"{self._where}: member {name} is a link loop")

    def _read_small(self, name: str, size_limit: str) -> bytes:
        _, member = self._member(name)
        limit: int = getattr(self._limits, size_limit)
        if member.size > limit:
            raise InputError(
                f"{self._where}: {name} has {member.size} bytes "
                f"(limit {Limits.key(size_limit)}: {limit})"
            )
        with _Slice(self._path, member.offset, member.size) as handle:
            return handle.read()

    def _entries(self) -> list[ArchiveEntry]:
        data = self._read_small("manifest.json", "manifest_max_bytes")
        document = load_json(data, f"{self._where}: manifest.json", self._limits)
        if not isinstance(document, list):
            raise InputError(f"{self._where}: manifest.json is not a list of images")
        try:
            return [ArchiveEntry.model_validate(item) for item in document]
        except ValidationError as error:
            raise invalid_document(f"{self._where}: manifest.json", error) from None

    def resolve(self, platform: Platform) -> ResolvedImage:
        entries = self._entries()
        if len(entries) != 1:
            tags = [", ".join(entry.repo_tags or ["<untagged>"]) for entry in entries]
            raise InputError(
                f"{self._where}: holds {len(entries)} images ({'; '.join(tags) or 'none'}); "
                "save exactly one image per archive"
            )
        entry = entries[0]
        config_name, _ = self._member(entry.config)
        data = self._read_small(config_name, "json_max_bytes")
        config_digest = digest_of_member(config_name)
        if config_digest is not None:
            check_digest(data, config_digest, f"{self._where} config")
        else:
            config_digest = f"sha256:{hashlib.sha256(data).hexdigest()}"
        config = parse_config(data, f"{self._where} config", self._limits)
        layers: list[BlobRef] = []
        for layer in entry.layers:
            name, member = self._member(layer)
            layers.append(BlobRef(digest_of_member(name), member.size, LAYER_MEDIA_TYPE, name))
        return ResolvedImage(
            source=self.kind,
            reference=self._where,
            manifest_digest=config_digest,
            platforms=(),
            config=config,
            config_digest=config_digest,
            layers=tuple(layers),
        )

    def open_blob(self, blob: BlobRef) -> AbstractContextManager[BinaryIO]:
        _, member = self._member(blob.locator)
        return _Slice(self._path, member.offset, member.size)  # type: ignore[return-value]
