"""A small pure-Python OCI image writer for tests: no engine, no pull.

`make_image` assembles gzip layers, a config blob (env, labels, history, platform) and a
manifest; `make_index` puts several platform images under one index. The results can be
pushed to a registry over HTTP (monolithic blob upload + manifest PUT), written as an OCI
image layout dir, or (single images) as a `docker save` archive that `docker load` reads.
With `docker_media_types=True` the Docker v2 schema 2 media types are used instead of OCI's.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tarfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from bed.images import LayerFiles, layer_tar

OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER_GZIP = "application/vnd.oci.image.layer.v1.tar+gzip"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_MANIFEST_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
DOCKER_LAYER_GZIP = "application/vnd.docker.image.rootfs.diff.tar.gzip"

# A fixed creation time keeps digests stable across runs.
EPOCH = "1970-01-01T00:00:00Z"


def sha256_digest(data: bytes) -> str:
    """`sha256:<hex>` of `data`."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def canonical_json(value: object) -> bytes:
    """Compact JSON with sorted keys: the bytes that get digested and pushed."""
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


@dataclass(frozen=True)
class Blob:
    """Content-addressed bytes with their media type."""

    media_type: str
    data: bytes
    annotations: Mapping[str, str] | None = None

    @property
    def digest(self) -> str:
        """`sha256:<hex>` of the bytes."""
        return sha256_digest(self.data)

    def descriptor(self, **extra: object) -> dict[str, object]:
        """The OCI descriptor pointing at this blob (extra keys such as `platform` appended)."""
        described: dict[str, object] = {
            "mediaType": self.media_type,
            "digest": self.digest,
            "size": len(self.data),
        }
        if self.annotations:
            described["annotations"] = dict(self.annotations)
        described.update(extra)
        return described


@dataclass(frozen=True)
class Platform:
    """The platform an image is for, as in OCI configs and index entries."""

    os: str = "linux"
    architecture: str = "amd64"
    variant: str | None = None

    def as_dict(self) -> dict[str, str]:
        """The `platform` object of an index entry."""
        described = {"architecture": self.architecture, "os": self.os}
        if self.variant:
            described["variant"] = self.variant
        return described


@dataclass(frozen=True)
class Image:
    """One image: its manifest, config and compressed layers (plus the uncompressed tars)."""

    manifest: Blob
    config: Blob
    layers: tuple[Blob, ...]
    layer_tars: tuple[bytes, ...]
    platform: Platform

    @property
    def digest(self) -> str:
        """The manifest digest, the image's identity in a registry."""
        return self.manifest.digest

    def config_json(self) -> dict[str, Any]:
        """The decoded config blob."""
        decoded: dict[str, Any] = json.loads(self.config.data)
        return decoded


@dataclass(frozen=True)
class Index:
    """An image index (or Docker manifest list) over platform images."""

    manifest: Blob
    images: tuple[Image, ...] = field(default_factory=tuple)

    @property
    def digest(self) -> str:
        """The index digest."""
        return self.manifest.digest


def gzip_layer(tar: bytes) -> bytes:
    """Gzip with mtime 0 so the compressed digest is reproducible."""
    buffer = io.BytesIO()
    with gzip.GzipFile(fileobj=buffer, mode="wb", mtime=0, compresslevel=6) as stream:
        stream.write(tar)
    return buffer.getvalue()


def make_image(
    layers: Sequence[LayerFiles | bytes],
    *,
    env: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    platform: Platform | None = None,
    history: Sequence[Mapping[str, object]] | None = None,
    config_extra: Mapping[str, object] | None = None,
    annotations: Mapping[str, str] | None = None,
    docker_media_types: bool = False,
) -> Image:
    """Assemble an image from layers (file dicts, or ready uncompressed tar bytes).

    `history` replaces the default one entry per layer (`created_by: "bed layer N"`); entries
    with `"empty_layer": True` take no layer. `config_extra` goes into the config's `config`
    object (e.g. {"User": "1000", "Cmd": ["python"], "WorkingDir": "/app"}).
    """
    platform = platform or Platform()
    tars = tuple(item if isinstance(item, bytes) else layer_tar(item) for item in layers)
    layer_type = DOCKER_LAYER_GZIP if docker_media_types else OCI_LAYER_GZIP
    blobs = tuple(Blob(layer_type, gzip_layer(tar)) for tar in tars)
    runtime: dict[str, object] = {}
    if env:
        runtime["Env"] = [f"{key}={value}" for key, value in env.items()]
    if labels:
        runtime["Labels"] = dict(labels)
    runtime.update(config_extra or {})
    config_doc: dict[str, object] = {
        "created": EPOCH,
        **platform.as_dict(),
        "config": runtime,
        "rootfs": {"type": "layers", "diff_ids": [sha256_digest(tar) for tar in tars]},
        "history": list(history)
        if history is not None
        else [{"created": EPOCH, "created_by": f"bed layer {n}"} for n in range(len(tars))],
    }
    config = Blob(DOCKER_CONFIG if docker_media_types else OCI_CONFIG, canonical_json(config_doc))
    manifest_type = DOCKER_MANIFEST if docker_media_types else OCI_MANIFEST
    manifest_doc: dict[str, object] = {
        "schemaVersion": 2,
        "mediaType": manifest_type,
        "config": config.descriptor(),
        "layers": [blob.descriptor() for blob in blobs],
    }
    if annotations:
        manifest_doc["annotations"] = dict(annotations)
    return Image(
        manifest=Blob(manifest_type, canonical_json(manifest_doc)),
        config=config,
        layers=blobs,
        layer_tars=tars,
        platform=platform,
    )


def make_index(images: Sequence[Image], *, docker_media_types: bool = False) -> Index:
    """An index (Docker manifest list with `docker_media_types`) over `images`."""
    index_type = DOCKER_MANIFEST_LIST if docker_media_types else OCI_INDEX
    document = {
        "schemaVersion": 2,
        "mediaType": index_type,
        "manifests": [
            image.manifest.descriptor(platform=image.platform.as_dict()) for image in images
        ],
    }
    return Index(manifest=Blob(index_type, canonical_json(document)), images=tuple(images))


def _push_blob(
    session: requests.Session, base: str, repository: str, blob: Blob, timeout: float
) -> None:
    url = f"{base}/v2/{repository}/blobs/{blob.digest}"
    if session.head(url, timeout=timeout).status_code == 200:
        return
    started = session.post(f"{base}/v2/{repository}/blobs/uploads/", timeout=timeout)
    started.raise_for_status()
    location = started.headers["Location"]
    if location.startswith("/"):
        location = base + location
    separator = "&" if "?" in location else "?"
    finished = session.put(
        f"{location}{separator}digest={blob.digest}",
        data=blob.data,
        headers={"Content-Type": "application/octet-stream"},
        timeout=timeout,
    )
    finished.raise_for_status()


def _put_manifest(
    session: requests.Session,
    base: str,
    repository: str,
    reference: str,
    blob: Blob,
    timeout: float,
) -> None:
    response = session.put(
        f"{base}/v2/{repository}/manifests/{reference}",
        data=blob.data,
        headers={"Content-Type": blob.media_type},
        timeout=timeout,
    )
    if response.status_code != 201:
        raise RuntimeError(
            f"PUT manifest {repository}:{reference} -> {response.status_code} {response.text}"
        )


def push(
    registry_url: str,
    repository: str,
    artifact: Image | Index,
    tag: str | None = None,
    auth: tuple[str, str] | None = None,
    timeout: float = 30.0,
) -> str:
    """Push an image or index (children first) to `registry_url`; returns its digest.

    Without `tag` the top manifest is put by digest only (untagged).
    """
    images = artifact.images if isinstance(artifact, Index) else (artifact,)
    with requests.Session() as session:
        session.auth = auth
        for image in images:
            for blob in (*image.layers, image.config):
                _push_blob(session, registry_url, repository, blob, timeout)
            if isinstance(artifact, Index):
                # An index may only name manifests the repository already holds.
                _put_manifest(
                    session, registry_url, repository, image.digest, image.manifest, timeout
                )
        _put_manifest(
            session, registry_url, repository, tag or artifact.digest, artifact.manifest, timeout
        )
    return artifact.digest


def _all_blobs(artifact: Image | Index) -> list[Blob]:
    images = artifact.images if isinstance(artifact, Index) else (artifact,)
    blobs = [blob for image in images for blob in (*image.layers, image.config, image.manifest)]
    if isinstance(artifact, Index):
        blobs.append(artifact.manifest)
    return blobs


def write_oci_layout(directory: Path, artifact: Image | Index, tag: str | None = None) -> Path:
    """Write an OCI image layout (oci-layout, index.json, blobs/sha256/*) and return its dir."""
    blob_dir = directory / "blobs" / "sha256"
    blob_dir.mkdir(parents=True, exist_ok=True)
    for blob in _all_blobs(artifact):
        (blob_dir / blob.digest.removeprefix("sha256:")).write_bytes(blob.data)
    annotations = {"org.opencontainers.image.ref.name": tag} if tag else None
    top = Blob(artifact.manifest.media_type, artifact.manifest.data, annotations)
    (directory / "oci-layout").write_text(json.dumps({"imageLayoutVersion": "1.0.0"}))
    index = {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": [top.descriptor()]}
    (directory / "index.json").write_bytes(canonical_json(index))
    return directory


def write_docker_archive(path: Path, image: Image, repo_tags: Sequence[str] = ()) -> Path:
    """Write a `docker save`-style tar (manifest.json, config, uncompressed layer.tar files)."""
    config_name = image.config.digest.removeprefix("sha256:") + ".json"
    layer_names = [
        sha256_digest(tar).removeprefix("sha256:") + "/layer.tar" for tar in image.layer_tars
    ]
    manifest = [{"Config": config_name, "RepoTags": list(repo_tags), "Layers": layer_names}]
    members = [(config_name, image.config.data), ("manifest.json", canonical_json(manifest))]
    members += list(zip(layer_names, image.layer_tars, strict=True))
    with tarfile.open(path, mode="w") as archive:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path
