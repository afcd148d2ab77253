"""Images read straight from a registry over HTTP, blobs streamed, nothing pulled."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import BinaryIO

from gpuship.image.source import (
    BlobRef,
    ImageSource,
    Platform,
    ResolvedImage,
    descend_to_manifest,
    layer_blobs,
    parse_config,
    read_limited,
)
from gpuship.reference import Reference, parse_reference
from gpuship.registry.access import RegistryAccess
from gpuship.registry.manifest import Descriptor


class RegistrySource(ImageSource):
    """`ghcr.io/org/img:tag`, `host:port/name@sha256:...` or `registry://...`."""

    kind = "registry"
    verifies_blobs = True

    def __init__(
        self,
        reference: str,
        access: RegistryAccess,
    ) -> None:
        self._reference: Reference = parse_reference(reference)
        self._limits = access.limits
        self._client = access.client()

    def _fetch(self, descriptor: Descriptor) -> bytes:
        return self._client.get_manifest(self._reference.repository.at(descriptor.digest)).data

    def resolve(self, platform: Platform) -> ResolvedImage:
        where = str(self._reference)
        fetched = self._client.get_manifest(self._reference)
        manifest, digest, platforms = descend_to_manifest(
            fetched.data,
            fetched.media_type,
            fetched.digest,
            self._fetch,
            platform,
            where,
            self._limits,
        )
        config_digest = manifest.config.digest
        with self._client.open_blob(self._reference.repository, config_digest) as blob:
            data = read_limited(
                blob,  # type: ignore[arg-type]
                self._limits.json_max_bytes,
                f"{where} config",
                "json_max_bytes",
            )
        config = parse_config(data, f"{where} config {config_digest}", self._limits)
        return ResolvedImage(
            source=self.kind,
            reference=where,
            manifest_digest=digest,
            platforms=platforms,
            config=config,
            config_digest=config_digest,
            layers=layer_blobs(manifest.layers, where),
        )

    def open_blob(self, blob: BlobRef) -> AbstractContextManager[BinaryIO]:
        assert blob.digest is not None  # registry manifests always name their blobs
        return self._client.open_blob(self._reference.repository, blob.digest)  # type: ignore[return-value]

    def close(self) -> None:
        self._client.close()
