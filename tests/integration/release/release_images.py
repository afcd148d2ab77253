"""Release test helpers: candidate images (single and multi-platform with BuildKit-style
attestation manifests) for the bed registry, the shape of an in-process CLI run, and where a
tag points."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bed.oci import OCI_INDEX, Blob, Image, Index, Platform, canonical_json, make_image, push
from gpuship.reference import Repository
from gpuship.registry.client import RegistryClient

ATTESTATION_ANNOTATIONS = {
    "vnd.docker.reference.type": "attestation-manifest",
}


def candidate_index(
    marker: str, layer_size: int = 2000, architectures: tuple[str, ...] = ("amd64", "arm64")
) -> Index:
    """One image per architecture and one attestation manifest per image, as buildx pushes
    them."""
    images = [
        make_image(
            [{f"app/{marker}-{arch}.bin": os.urandom(layer_size)}],
            platform=Platform(architecture=arch),
            labels={"marker": marker},
        )
        for arch in architectures
    ]
    attestations = [
        make_image(
            [{"provenance.json": json.dumps({"subject": image.digest}).encode()}],
            platform=Platform(os="unknown", architecture="unknown"),
        )
        for image in images
    ]
    entries: list[dict[str, object]] = [
        image.manifest.descriptor(platform=image.platform.as_dict()) for image in images
    ]
    entries += [
        attestation.manifest.descriptor(
            platform={"architecture": "unknown", "os": "unknown"},
            annotations={**ATTESTATION_ANNOTATIONS, "vnd.docker.reference.digest": image.digest},
        )
        for attestation, image in zip(attestations, images, strict=True)
    ]
    document = {"schemaVersion": 2, "mediaType": OCI_INDEX, "manifests": entries}
    return Index(
        manifest=Blob(OCI_INDEX, canonical_json(document)), images=(*images, *attestations)
    )


def candidate_image(marker: str, layer_size: int = 2000) -> Image:
    """A single-platform image."""
    return make_image([{f"app/{marker}.bin": os.urandom(layer_size)}], labels={"marker": marker})


@dataclass(frozen=True)
class CliResult:
    code: int
    report: dict[str, Any]
    stderr: str


RunCli = Callable[..., CliResult]


def push_candidate(url: str, repository: str, artifact: Image | Index, auth: Any = None) -> str:
    """Push untagged (as a build pushes a candidate by digest); returns the digest."""
    return push(url, repository, artifact, auth=auth)


def dated_image(marker: str, created: str) -> Image:
    """A single image whose config says it was created at `created` (RFC 3339)."""
    base = candidate_image(marker)
    config = json.loads(base.config.data)
    config["created"] = created
    config_blob = Blob(base.config.media_type, canonical_json(config))
    manifest = json.loads(base.manifest.data)
    manifest["config"] = config_blob.descriptor()
    return Image(
        manifest=Blob(base.manifest.media_type, canonical_json(manifest)),
        config=config_blob,
        layers=base.layers,
        layer_tars=base.layer_tars,
        platform=base.platform,
    )


SEED_REPOSITORY = "seed/images"
_SEEDED: set[tuple[str, str]] = set()


def place_seeded(
    client: RegistryClient, url: str, repo: Repository, artifact: Image | Index, tag: str | None
) -> str:
    """Put `artifact` in `repo` (tagged, or by digest), its blobs mounted from a seed
    repository it is pushed to once per process: one request a blob instead of three uploads,
    for tests that set up hundreds of repositories."""
    seed = Repository(repo.registry, SEED_REPOSITORY)
    if (url, artifact.digest) not in _SEEDED:
        push(url, seed.name, artifact)
        _SEEDED.add((url, artifact.digest))
    images = artifact.images if isinstance(artifact, Index) else (artifact,)
    for image in images:
        for blob in (image.config, *image.layers):
            assert client.mount_blob(repo, blob.digest, seed)
        if isinstance(artifact, Index):
            client.put_manifest(
                repo.at(image.digest), image.manifest.data, image.manifest.media_type
            )
    manifest = artifact.manifest
    return client.put_manifest(
        repo.tag(tag) if tag else repo.at(manifest.digest), manifest.data, manifest.media_type
    )


def tag_digest(client: RegistryClient, repo: Repository, tag: str) -> str | None:
    """The digest `tag` points at now; None when the tag does not exist."""
    head = client.head_manifest(repo.tag(tag))
    return head.digest if head is not None else None


def stable_and_candidate(url: str, host: str, name: str) -> tuple[Repository, str, str]:
    """`stable` at `old` (pushed, no release yet); candidate `new` pushed untagged."""
    old = push(url, name, candidate_image(f"{name}-old"), tag="stable")
    new = push(url, name, candidate_image(f"{name}-new"))
    return Repository(host, name), old, new
