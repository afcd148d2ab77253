"""Images in an OCI image layout directory (`oci:PATH[:TAG]`, image-spec `image-layout.md`).

Only regular files inside the layout are read: a blob that is a FIFO, a device or a symlink
leading out of the layout directory is refused, so a hostile layout can neither hang a read
nor make gpuship read files elsewhere on the runner.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import BinaryIO

from pydantic import ValidationError

from gpuship.documents import open_regular, read_file, read_json
from gpuship.errors import InputError
from gpuship.image.source import (
    BlobRef,
    ImageSource,
    Platform,
    ResolvedImage,
    check_digest,
    descend_to_manifest,
    invalid_document,
    layer_blobs,
    parse_config,
)
from gpuship.limits import DEFAULT_LIMITS, Limits
from gpuship.registry.manifest import MEDIA_OCI_INDEX, Descriptor, ImageIndex

REF_NAME = "org.opencontainers.image.ref.name"


class OciLayoutSource(ImageSource):
    """An OCI layout: `index.json` plus `blobs/<alg>/<hex>`; `TAG` selects by ref name."""

    kind = "oci"

    def __init__(self, root: Path, tag: str | None, limits: Limits = DEFAULT_LIMITS) -> None:
        self._root = root
        self._real_root = root.resolve()
        self._tag = tag
        self._limits = limits
        self._where = f"oci:{root}"
        if not (root / "index.json").exists():
            raise InputError(f"{self._where}: not an OCI image layout (no index.json)")

    def _inside(self, path: Path, what: str) -> Path:
        """`path` with its links resolved, refused when it leads out of the layout."""
        real = path.resolve()
        if not real.is_relative_to(self._real_root):
            raise InputError(f"{self._where}: {what} is a link out of the layout ({path})")
        return real

    def _blob_path(self, digest: str, what: str) -> Path:
        algorithm, _, encoded = digest.partition(":")
        if not algorithm.isalnum() or not encoded.isalnum():
            raise InputError(f"{self._where}: invalid digest {digest[:100]!r}")
        path = self._root / "blobs" / algorithm / encoded
        if not path.exists() and not path.is_symlink():
            raise InputError(f"{self._where}: {what} blob {digest} is missing")
        return self._inside(path, f"{what} blob {digest}")

    def _read(self, digest: str, size_limit: str, what: str) -> bytes:
        data = read_file(self._blob_path(digest, what), f"{what} blob", self._limits, size_limit)
        check_digest(data, digest, f"{self._where} {what}")
        return data

    def _fetch(self, descriptor: Descriptor) -> bytes:
        return self._read(descriptor.digest, "manifest_max_bytes", "manifest")

    def _top(self) -> tuple[bytes, str, str]:
        index_path = self._inside(self._root / "index.json", "index.json")
        document = read_json(index_path, "index.json", self._limits, "manifest_max_bytes")
        try:
            index = ImageIndex.model_validate(document)
        except ValidationError as error:
            raise invalid_document(f"{self._where}: index.json", error) from None
        entries = index.manifests
        if self._tag is not None:
            entries = [item for item in entries if item.annotations.get(REF_NAME) == self._tag]
            if not entries:
                names = sorted({i.annotations.get(REF_NAME, "") for i in index.manifests} - {""})
                raise InputError(
                    f"{self._where}: no image tagged '{self._tag}' "
                    f"(tags: {', '.join(names) or 'none'})"
                )
        if len(entries) == 1:
            only = entries[0]
            return self._fetch(only), only.media_type, only.digest
        # Several untagged entries: index.json itself is the multi-platform index.
        multi = index.model_copy(update={"manifests": entries})
        return multi.model_dump_json(by_alias=True).encode(), MEDIA_OCI_INDEX, ""

    def resolve(self, platform: Platform) -> ResolvedImage:
        where = self._where + (f":{self._tag}" if self._tag else "")
        data, media_type, digest = self._top()
        manifest, digest, platforms = descend_to_manifest(
            data, media_type, digest, self._fetch, platform, where, self._limits
        )
        config_digest = manifest.config.digest
        config = parse_config(
            self._read(config_digest, "json_max_bytes", "config"), where, self._limits
        )
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
        assert blob.digest is not None
        return open_regular(self._blob_path(blob.digest, "layer"), "layer blob")
