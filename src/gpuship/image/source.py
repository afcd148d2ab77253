"""Where an image is read from: one interface, one adapter per kind of source.

`IMAGE` on the command line is a registry reference (`ghcr.io/org/img:tag`, `registry://...`),
`docker://REF` (a local engine), `docker-archive:PATH` (a `docker save` tarball) or
`oci:PATH[:TAG]` (an OCI image layout). Every adapter resolves the platform manifest and
config, then hands each layer blob to a scanner exactly once.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import BinaryIO

from pydantic import Field, ValidationError

from gpuship import platforms
from gpuship.documents import load_json
from gpuship.errors import InputError, LimitExceeded
from gpuship.image.layerscan import LayerScan
from gpuship.limits import DEFAULT_LIMITS, Limits
from gpuship.platforms import PlatformMissing
from gpuship.reference import content_matches
from gpuship.registry.manifest import (
    Descriptor,
    ImageIndex,
    ImageManifest,
    OciDocument,
    parse_manifest,
)

_MAX_INDEX_DEPTH = 4
# What `inspect` reads as an image (image-spec media types; Docker image manifest v2.2).
CONFIG_MEDIA_TYPES = frozenset(
    {"application/vnd.oci.image.config.v1+json", "application/vnd.docker.container.image.v1+json"}
)
LAYER_MEDIA_TYPES = frozenset(
    {
        "application/vnd.oci.image.layer.v1.tar",
        "application/vnd.oci.image.layer.v1.tar+gzip",
        "application/vnd.oci.image.layer.v1.tar+zstd",
        "application/vnd.oci.image.layer.nondistributable.v1.tar",
        "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip",
        "application/vnd.oci.image.layer.nondistributable.v1.tar+zstd",
        "application/vnd.docker.image.rootfs.diff.tar",
        "application/vnd.docker.image.rootfs.diff.tar.gzip",
        "application/vnd.docker.image.rootfs.diff.tar.zstd",
        "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip",
    }
)


class HistoryEntry(OciDocument):
    created_by: str = ""
    empty_layer: bool = False
    comment: str = ""


class ContainerConfig(OciDocument):
    env: list[str] | None = Field(default=None, alias="Env")
    labels: dict[str, str] | None = Field(default=None, alias="Labels")
    user: str | None = Field(default=None, alias="User")


class RootFs(OciDocument):
    type: str = "layers"
    diff_ids: list[str] = Field(default_factory=list)


class ImageConfigDocument(OciDocument):
    """The image config blob (OCI image-spec `config.md`), the fields gpuship reads."""

    architecture: str = ""
    os: str = ""
    variant: str | None = None
    config: ContainerConfig | None = None
    rootfs: RootFs = Field(default_factory=RootFs)
    history: list[HistoryEntry] = Field(default_factory=list)

    @property
    def env(self) -> dict[str, str]:
        pairs = (self.config.env if self.config and self.config.env else []) or []
        result: dict[str, str] = {}
        for pair in pairs:
            key, _, value = pair.partition("=")
            result[key] = value
        return result

    @property
    def labels(self) -> dict[str, str]:
        return dict(self.config.labels or {}) if self.config else {}


def parse_config(data: bytes, where: str, limits: Limits = DEFAULT_LIMITS) -> ImageConfigDocument:
    """Validate an image config blob; InputError naming `where` when it is not one."""
    document = load_json(data, f"{where}: image config", limits)
    try:
        return ImageConfigDocument.model_validate(document)
    except ValidationError as error:
        raise invalid_document(f"{where}: image config", error) from None


def invalid_document(what: str, error: ValidationError) -> InputError:
    """The error for a document pydantic refused: where in it, and the first problem."""
    first = error.errors()[0]
    at = ".".join(str(part) for part in first["loc"]) or "(document)"
    return InputError(f"{what} is invalid at {at}: {first['msg']}")


@dataclass(frozen=True)
class Platform:
    os: str
    architecture: str
    variant: str | None = None

    @classmethod
    def parse(cls, text: str) -> Platform:
        parts = text.strip().split("/")
        if len(parts) not in (2, 3) or not all(parts):
            raise InputError(f"invalid --platform '{text}': expected OS/ARCH[/VARIANT]")
        return cls(parts[0], parts[1], parts[2] if len(parts) == 3 else None)

    def __str__(self) -> str:
        return "/".join(part for part in (self.os, self.architecture, self.variant) if part)


def platform_of(descriptor: Descriptor) -> str:
    platform = descriptor.platform
    if platform is None:
        return "unknown"
    return str(Platform(platform.os, platform.architecture, platform.variant))


def choose_platform(
    index: ImageIndex, platform: Platform, where: str
) -> tuple[Descriptor, tuple[str, ...]]:
    """The index entry for `platform` and the list of all platforms; `PlatformMissing` if none.

    Both sides are compared normalised, as containerd does (`aarch64` is `arm64`).
    """
    entries = [entry for entry in index.manifests if not entry.is_attestation]
    available = tuple(platform_of(entry) for entry in entries)
    for entry, name in zip(entries, available, strict=True):
        if entry.platform is not None and platforms.matches(name, str(platform)):
            return entry, available
    raise PlatformMissing(where, str(platform), available)


@dataclass(frozen=True)
class BlobRef:
    """A layer blob: its digest and size as the manifest states them (None when it does not)."""

    digest: str | None
    size: int | None
    media_type: str
    locator: str = ""


@dataclass(frozen=True)
class ResolvedImage:
    """One platform's image: where it came from, its config and its layer blobs."""

    source: str
    reference: str
    manifest_digest: str
    platforms: tuple[str, ...]
    config: ImageConfigDocument
    config_digest: str
    layers: tuple[BlobRef, ...]

    @property
    def platform(self) -> str:
        """The platform the image's config states (`linux/arm64/v8`)."""
        return str(Platform(self.config.os, self.config.architecture, self.config.variant))


LayerScanner = Callable[[int, BlobRef, BinaryIO], LayerScan]


class ImageSource(abc.ABC):
    """An adapter that reads images from one kind of place."""

    kind: str = ""
    # True when the adapter itself checks every blob against its digest (registry client).
    verifies_blobs: bool = False
    # True when `open_blob` reads one layer on its own (all but the engine's whole-image export).
    opens_blobs: bool = True

    @abc.abstractmethod
    def resolve(self, platform: Platform) -> ResolvedImage:
        """Find the manifest for `platform` and read the config (no layer data)."""

    @abc.abstractmethod
    def open_blob(self, blob: BlobRef) -> AbstractContextManager[BinaryIO]:
        """The raw bytes of one blob as a stream."""

    def scan_layers(
        self, image: ResolvedImage, scanner: LayerScanner, workers: int
    ) -> tuple[ResolvedImage, list[LayerScan]]:
        """Scan every layer of `image` (as this source resolved it) once, several at a time.

        Returns the image the scans belong to: taking the resolved image, not the platform,
        lets a caller look at the config before it decides to read layers, without a second
        manifest and config fetch.
        """

        def one(item: tuple[int, BlobRef]) -> LayerScan:
            index, blob = item
            with self.open_blob(blob) as raw:
                return scanner(index, blob, raw)

        if workers <= 1 or len(image.layers) <= 1:
            return image, [one(item) for item in enumerate(image.layers)]
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="layer") as pool:
            futures = [pool.submit(one, item) for item in enumerate(image.layers)]
            try:
                return image, [future.result() for future in futures]
            except BaseException:
                # One bad layer fails the image: don't start the layers still queued.
                for future in futures:
                    future.cancel()
                raise

    def close(self) -> None:  # noqa: B027 - most adapters hold nothing to release
        """Release connections and files."""

    def __enter__(self) -> ImageSource:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def layer_blobs(descriptors: Sequence[Descriptor], where: str) -> tuple[BlobRef, ...]:
    """The layers of an image manifest; InputError for one whose media type is not a layer's."""
    for index, item in enumerate(descriptors):
        if item.media_type not in LAYER_MEDIA_TYPES:
            raise InputError(
                f"{where}: layer {index} ({item.digest}) has media type "
                f"{item.media_type[:100]!r}, which is not an image layer type"
            )
    return tuple(BlobRef(item.digest, item.size, item.media_type) for item in descriptors)


def check_image_config(manifest: ImageManifest, where: str) -> None:
    """InputError when the manifest's config is not an image config (an OCI artifact)."""
    media_type = manifest.config.media_type
    if media_type not in CONFIG_MEDIA_TYPES:
        kind = f" (artifact type {manifest.artifact_type})" if manifest.artifact_type else ""
        raise InputError(
            f"{where} is not a container image{kind}: its config has media type "
            f"{media_type[:100]!r}"
        )


def read_limited(stream: BinaryIO, limit: int, what: str, limit_name: str) -> bytes:
    """Read a small document to its end, refusing one larger than `limit`."""
    parts: list[bytes] = []
    total = 0
    while True:
        chunk = stream.read(min(1 << 20, limit + 1 - total))
        if not chunk:
            return b"".join(parts)
        parts.append(chunk)
        total += len(chunk)
        if total > limit:
            raise LimitExceeded(
                what, f"is larger than {limit} bytes", Limits.key(limit_name), limit
            )


def check_digest(data: bytes, digest: str, what: str) -> None:
    """InputError unless `data` hashes to `digest` (content is never trusted unverified)."""
    if not content_matches(data, digest, what):
        raise InputError(f"{what}: content does not match digest {digest}")


def descend_to_manifest(
    data: bytes,
    media_type: str,
    digest: str,
    fetch: Callable[[Descriptor], bytes],
    platform: Platform,
    where: str,
    limits: Limits = DEFAULT_LIMITS,
) -> tuple[ImageManifest, str, tuple[str, ...]]:
    """Follow indexes down to the image manifest for `platform`.

    Returns (manifest, its digest, platforms the index offers; empty for a single manifest).
    """
    platforms: tuple[str, ...] = ()
    for _ in range(_MAX_INDEX_DEPTH):
        document = parse_manifest(data, media_type, limits, where)
        if isinstance(document, ImageManifest):
            check_image_config(document, where)
            return document, digest, platforms
        chosen, available = choose_platform(document, platform, where)
        platforms = platforms or available
        data = fetch(chosen)
        check_digest(data, chosen.digest, f"{where} manifest {chosen.digest}")
        media_type, digest = chosen.media_type, chosen.digest
    raise InputError(f"{where}: indexes nested more than {_MAX_INDEX_DEPTH} deep")
