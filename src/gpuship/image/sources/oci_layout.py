"""Images in an OCI image layout directory (`oci:PATH[:TAG]`, image-spec `image-layout.md`)."""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from pathlib import Path
from typing import BinaryIO

from pydantic import ValidationError

from gpuship.errors import InputError
from gpuship.image.source import (
    MAX_CONFIG_BYTES,
    MAX_MANIFEST_BYTES,
    BlobRef,
    ImageSource,
    Platform,
    ResolvedImage,
    check_digest,
    descend_to_manifest,
    layer_blobs,
    parse_config,
)
from gpuship.registry.manifest import MEDIA_OCI_INDEX, Descriptor, ImageIndex

REF_NAME = "org.opencontainers.image.ref.name"


class OciLayoutSource(ImageSource):
    """An OCI layout: `index.json` plus `blobs/<alg>/<hex>`; `TAG` selects by ref name."""

    kind = "oci"

    def __init__(self, root: Path, tag: str | None) -> None:
        self._root = root
        self._tag = tag
        if not (root / "index.json").is_file():
            raise InputError(f"oci:{root}: not an OCI image layout (no index.json)")

    def _blob_path(self, digest: str) -> Path:
        algorithm, _, encoded = digest.partition(":")
        if not algorithm.isalnum() or not encoded.isalnum():
            raise InputError(f"oci:{self._root}: invalid digest {digest!r}")
        return self._root / "blobs" / algorithm / encoded

    def _read(self, digest: str, limit: int, what: str) -> bytes:
        path = self._blob_path(digest)
        try:
            with path.open("rb") as handle:
                data = handle.read(limit + 1)
        except FileNotFoundError:
            raise InputError(f"oci:{self._root}: {what} blob {digest} is missing") from None
        if len(data) > limit:
            raise InputError(f"oci:{self._root}: {what} blob {digest} is larger than {limit} bytes")
        check_digest(data, digest, f"oci:{self._root} {what}")
        return data

    def _fetch(self, descriptor: Descriptor) -> bytes:
        return self._read(descriptor.digest, MAX_MANIFEST_BYTES, "manifest")

    def _top(self) -> tuple[bytes, str, str]:
        where = f"oci:{self._root}"
        try:
            index = ImageIndex.model_validate(json.loads((self._root / "index.json").read_bytes()))
        except (ValueError, ValidationError) as error:
            raise InputError(f"{where}: index.json is invalid: {error}") from None
        entries = index.manifests
        if self._tag is not None:
            entries = [item for item in entries if item.annotations.get(REF_NAME) == self._tag]
            if not entries:
                names = sorted({i.annotations.get(REF_NAME, "") for i in index.manifests} - {""})
                raise InputError(
                    f"{where}: no image tagged '{self._tag}' (tags: {', '.join(names) or 'none'})"
                )
        if len(entries) == 1:
            only = entries[0]
            return self._fetch(only), only.media_type, only.digest
        # Several untagged entries: index.json itself is the multi-platform index.
        document = index.model_copy(update={"manifests": entries})
        return document.model_dump_json(by_alias=True).encode(), MEDIA_OCI_INDEX, ""

    def resolve(self, platform: Platform) -> ResolvedImage:
        where = f"oci:{self._root}" + (f":{self._tag}" if self._tag else "")
        data, media_type, digest = self._top()
        manifest, digest, platforms = descend_to_manifest(
            data, media_type, digest, self._fetch, platform, where
        )
        config_digest = manifest.config.digest
        config = parse_config(self._read(config_digest, MAX_CONFIG_BYTES, "config"), where)
        return ResolvedImage(
            source=self.kind,
            reference=where,
            manifest_digest=digest,
            platforms=platforms,
            config=config,
            config_digest=config_digest,
            layers=layer_blobs(manifest.layers),
        )

    def open_blob(self, blob: BlobRef) -> AbstractContextManager[BinaryIO]:
        assert blob.digest is not None
        try:
            return self._blob_path(blob.digest).open("rb")
        except FileNotFoundError:
            raise InputError(f"oci:{self._root}: layer blob {blob.digest} is missing") from None
