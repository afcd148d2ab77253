"""Small OCI artifacts gpuship keeps in registries (release records, fleet audits).

An artifact is an OCI image manifest with an `artifactType`, the OCI empty config (`{}`) and one
layer holding a JSON document (image-spec `manifest.md`, "Guidelines for Artifact Usage").
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from gpuship.reference import Repository, sha256_digest
from gpuship.registry.client import RegistryClient
from gpuship.registry.manifest import MEDIA_OCI_EMPTY, MEDIA_OCI_MANIFEST

EMPTY_CONFIG = b"{}"
# Artifacts are read this many at a time (one manifest GET each): enough to overlap the round
# trips, few enough that a registry's rate limit sees no burst. Each worker shares the one
# client (its session pools connections; its token cache is locked).
READ_WORKERS = 8

T = TypeVar("T")


def read_each(read: Callable[[str], T], tags: Sequence[str]) -> list[T]:
    """`read(tag)` for every tag, READ_WORKERS at a time, results in the order of `tags`. An
    error is raised once the reads already running have ended; the rest are not started."""
    if len(tags) <= 1:
        return [read(tag) for tag in tags]
    with ThreadPoolExecutor(max_workers=READ_WORKERS, thread_name_prefix="read") as pool:
        return list(pool.map(read, tags))


def canonical_json(document: object) -> bytes:
    """Sorted, compact JSON: the same document always has the same bytes (and digest)."""
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def ensure_empty_config(client: RegistryClient, repo: Repository) -> None:
    """Make the OCI empty config blob `{}` present in `repo` (usually it already is)."""
    if not client.blob_exists(repo, sha256_digest(EMPTY_CONFIG)):
        client.push_blob(repo, EMPTY_CONFIG)


def artifact_manifest(
    artifact_type: str,
    data: bytes,
    annotations: dict[str, str],
    subject: dict[str, object] | None = None,
) -> bytes:
    """The manifest of an artifact whose one layer is `data` (of media type `artifact_type`)."""
    document: dict[str, object] = {
        "schemaVersion": 2,
        "mediaType": MEDIA_OCI_MANIFEST,
        "artifactType": artifact_type,
        "config": {
            "mediaType": MEDIA_OCI_EMPTY,
            "digest": sha256_digest(EMPTY_CONFIG),
            "size": len(EMPTY_CONFIG),
        },
        "layers": [{"mediaType": artifact_type, "digest": sha256_digest(data), "size": len(data)}],
        "annotations": annotations,
    }
    if subject is not None:
        document["subject"] = subject
    return canonical_json(document)


def push_artifact(client: RegistryClient, repo: Repository, manifest: bytes, data: bytes) -> str:
    """Store the layer, the empty config and the manifest by digest; returns the digest.

    No tag moves: the artifact is reachable only once the caller points a tag (or an index) at it.
    """
    ensure_empty_config(client, repo)
    client.push_blob(repo, data)
    return client.put_manifest(repo.at(sha256_digest(manifest)), manifest, MEDIA_OCI_MANIFEST)
