"""Images in a local Docker engine (`docker://REF`), read from the engine's export stream.

The engine only exports whole images (`GET /images/{name}/get`, what `docker save` uses), so
the export tar is walked as it streams: each layer member is scanned on the fly and the small
JSON members (manifest.json, the config) are kept; nothing is written to disk.
"""

from __future__ import annotations

import dataclasses
import io
import posixpath
from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager
from typing import Any, BinaryIO

from pydantic import ValidationError

from gpuship.docker.engine import Engine, EngineRefused, ImageMissing
from gpuship.documents import load_json
from gpuship.errors import DockerUnavailable, InputError
from gpuship.image.blobstream import GZIP_MAGIC, ZSTD_MAGIC
from gpuship.image.layerscan import LayerScan
from gpuship.image.source import (
    BlobRef,
    ContainerConfig,
    ImageConfigDocument,
    ImageSource,
    LayerScanner,
    Platform,
    ResolvedImage,
    RootFs,
    check_digest,
    parse_config,
)
from gpuship.image.sources.docker_archive import LAYER_MEDIA_TYPE, ArchiveEntry, digest_of_member
from gpuship.image.tarwalk import REGULAR, SYMLINK, TarWalker
from gpuship.limits import DEFAULT_LIMITS, Limits

_CHUNK = 1 << 20
_MAX_LINK_HOPS = 8


class _ChunkStream(io.RawIOBase):
    """A file-like view of the engine's chunk generator."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        super().__init__()
        self._chunks = chunks
        self._pending = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        while not self._pending:
            try:
                self._pending = memoryview(next(self._chunks))
            except StopIteration:
                return 0
        count = min(len(view), len(self._pending))
        view[:count] = self._pending[:count]
        self._pending = self._pending[count:]
        return count


class _MemberStream(io.RawIOBase):
    """The current export member: the bytes already peeked, then the rest from the walker."""

    def __init__(self, head: bytes, walker: TarWalker) -> None:
        super().__init__()
        self._head = memoryview(head)
        self._walker = walker

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        if self._head:
            count = min(len(view), len(self._head))
            view[:count] = self._head[:count]
            self._head = self._head[count:]
            return count
        return self._walker.readinto_content(view)


def _looks_like_layer(head: bytes) -> bool:
    return (
        head.startswith((GZIP_MAGIC, ZSTD_MAGIC))
        or head[257:262] == b"ustar"
        or (len(head) >= 512 and head[:512] == bytes(512))
    )


class DockerEngineSource(ImageSource):
    """An image the local engine holds, by name or ID."""

    kind = "docker"
    opens_blobs = False

    def __init__(
        self, reference: str, environ: Mapping[str, str], limits: Limits = DEFAULT_LIMITS
    ) -> None:
        self._reference = reference
        self._limits = limits
        self._where = f"docker://{reference}"
        self._engine = Engine.connect(environ)

    def _inspect(self) -> dict[str, Any]:
        try:
            return self._engine.inspect_image(self._reference)
        except ImageMissing:
            raise InputError(f"{self._where}: no such image in the local engine") from None
        except EngineRefused as error:
            raise DockerUnavailable(f"{self._where}: {error.message}") from None

    def resolve(self, platform: Platform) -> ResolvedImage:
        """Config values the engine reports (env, labels, layers); no layer data read."""
        attrs = self._inspect()
        settings = attrs.get("Config") or {}
        config = ImageConfigDocument(
            architecture=attrs.get("Architecture", ""),
            os=attrs.get("Os", ""),
            variant=attrs.get("Variant"),
            config=ContainerConfig(Env=settings.get("Env"), Labels=settings.get("Labels")),
            rootfs=RootFs(diff_ids=list((attrs.get("RootFS") or {}).get("Layers") or [])),
        )
        return ResolvedImage(
            source=self.kind,
            reference=self._where,
            manifest_digest=str(attrs.get("Id", "")),
            platforms=(),
            config=config,
            config_digest=str(attrs.get("Id", "")),
            layers=tuple(BlobRef(None, None, LAYER_MEDIA_TYPE) for _ in config.rootfs.diff_ids),
        )

    def open_blob(self, blob: BlobRef) -> AbstractContextManager[BinaryIO]:
        raise InputError(f"{self._where}: the engine exports whole images only")

    def scan_layers(
        self, image: ResolvedImage, scanner: LayerScanner, workers: int
    ) -> tuple[ResolvedImage, list[LayerScan]]:
        """The export carries its own manifest and config: the image it assembles replaces
        `image` (which `resolve` checked exists), so scans and config come from one read."""
        documents: dict[str, bytes] = {}
        links: dict[str, str] = {}
        scans: dict[str, LayerScan] = {}
        try:
            chunks = self._engine.export_image(self._reference, _CHUNK)
            walker = TarWalker(
                io.BufferedReader(_ChunkStream(iter(chunks)), _CHUNK),
                max_metadata_bytes=self._limits.tar_header_max_bytes,
            )
            for member in walker.members():
                name = posixpath.normpath(member.name).lstrip("/")
                if member.kind == SYMLINK:
                    links[name] = posixpath.normpath(
                        posixpath.join(posixpath.dirname(name), member.linkname)
                    )
                    continue
                if member.kind != REGULAR:
                    continue
                head = walker.read_content(512)
                if head.lstrip()[:1] in (b"{", b"["):
                    limit = self._limits.json_max_bytes
                    if member.size > limit:
                        raise InputError(
                            f"{self._where}: {name} has {member.size} bytes "
                            f"(limit {Limits.key('json_max_bytes')}: {limit})"
                        )
                    documents[name] = head + walker.read_content(member.size)
                elif _looks_like_layer(head):
                    blob = BlobRef(digest_of_member(name), member.size, LAYER_MEDIA_TYPE, name)
                    scans[name] = scanner(len(scans), blob, _MemberStream(head, walker))  # type: ignore[arg-type]
        except EngineRefused as error:
            raise DockerUnavailable(f"{self._where}: export failed: {error.message}") from None
        return self._assemble(documents, links, scans)

    def _follow(self, name: str, links: Mapping[str, str]) -> str:
        name = posixpath.normpath(name).lstrip("/")
        for _ in range(_MAX_LINK_HOPS):
            if name not in links:
                return name
            name = links[name]
        raise InputError(f"{self._where}: export member {name} is a link loop")

    def _assemble(
        self,
        documents: Mapping[str, bytes],
        links: Mapping[str, str],
        scans: Mapping[str, LayerScan],
    ) -> tuple[ResolvedImage, list[LayerScan]]:
        if "manifest.json" not in documents:
            raise InputError(f"{self._where}: export has no manifest.json")
        document = load_json(
            documents["manifest.json"], f"{self._where} manifest.json", self._limits
        )
        try:
            entries = [ArchiveEntry.model_validate(item) for item in document]
        except (TypeError, ValidationError) as error:
            raise InputError(
                f"{self._where}: export has no valid manifest.json ({error})"
            ) from None
        if len(entries) != 1:
            raise InputError(f"{self._where}: export holds {len(entries)} images, expected one")
        entry = entries[0]
        config_name = self._follow(entry.config, links)
        if config_name not in documents:
            raise InputError(f"{self._where}: export lacks the config {config_name}")
        data = documents[config_name]
        config_digest = digest_of_member(config_name) or ""
        if config_digest:
            check_digest(data, config_digest, f"{self._where} config")
        config = parse_config(data, f"{self._where} config", self._limits)
        ordered: list[LayerScan] = []
        blobs: list[BlobRef] = []
        for index, layer in enumerate(entry.layers):
            name = self._follow(layer, links)
            if name not in scans:
                raise InputError(f"{self._where}: export lacks layer {name}")
            scan = scans[name]
            ordered.append(dataclasses.replace(scan, index=index))
            blobs.append(BlobRef(scan.digest, scan.compressed_size, LAYER_MEDIA_TYPE, name))
        image = ResolvedImage(
            source=self.kind,
            reference=self._where,
            manifest_digest=config_digest,
            platforms=(),
            config=config,
            config_digest=config_digest,
            layers=tuple(blobs),
        )
        return image, ordered

    def close(self) -> None:
        self._engine.close()
