"""Make a manifest (and everything it references) present in another repository.

Children before parents: blobs first (mounted inside one registry, streamed across registries),
then each child manifest PUT by digest, then the top manifest by digest, so a registry that
checks references (registry:2 `MANIFEST_BLOB_UNKNOWN`) accepts every PUT. Manifest bytes are
never re-serialised, so every digest is preserved.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from gpuship.reference import Repository
from gpuship.registry.client import RegistryClient
from gpuship.registry.manifest import ImageIndex, parse_manifest


@dataclass
class CopyStats:
    """What a copy did: blob counts by outcome, manifests written, bytes streamed."""

    blobs: dict[str, int] = field(default_factory=lambda: {"exists": 0, "mounted": 0, "copied": 0})
    manifests_written: int = 0
    bytes_copied: int = 0


BlobProgress = Callable[[str, int], None]
# Parallel blob copies per manifest: enough to hide per-request latency, few enough not to
# trip registry rate limits.
BLOB_WORKERS = 4


def copy_manifest_tree(
    client: RegistryClient,
    source: Repository,
    target: Repository,
    digest: str,
    data: bytes,
    media_type: str,
    *,
    progress: BlobProgress | None = None,
    stats: CopyStats | None = None,
) -> CopyStats:
    """Copy manifest `digest` (whose bytes are `data`) and its references from source to target."""
    stats = stats or CopyStats()
    if client.head_manifest(target.at(digest)) is not None:
        return stats
    document = parse_manifest(data, media_type)
    if isinstance(document, ImageIndex):
        for child in document.manifests:
            fetched = client.get_manifest(source.at(child.digest))
            copy_manifest_tree(
                client,
                source,
                target,
                child.digest,
                fetched.data,
                fetched.media_type,
                progress=progress,
                stats=stats,
            )
    else:
        lock = threading.Lock()

        def copy(blob_digest: str) -> str:
            def report(count: int) -> None:
                with lock:
                    stats.bytes_copied += count
                    if progress is not None:
                        progress(blob_digest, count)

            return client.copy_blob(source, target, blob_digest, progress=report)

        # Blobs are independent: mounts (one request each) and streams run side by side.
        with ThreadPoolExecutor(max_workers=BLOB_WORKERS) as pool:
            for outcome in pool.map(copy, [blob.digest for blob in document.blobs]):
                stats.blobs[outcome] += 1
    client.put_manifest(target.at(digest), data, media_type)
    stats.manifests_written += 1
    return stats
