"""The image a release publishes, and telling when the repository no longer holds it.

Prune (retention) may delete the candidate, or a child manifest of an index, before a release
reads it or while it runs; the registry then refuses the tag's PUT (registry:2 answers 400
MANIFEST_BLOB_UNKNOWN, others MANIFEST_UNKNOWN or 404). Either way the input the user gave no
longer exists: exit 2, every tag as it was, one line saying what is gone. A refused PUT alone
proves nothing (a registry may refuse for other reasons), so the candidate is read again: only
a part found missing then makes it this error.
"""

from __future__ import annotations

from gpuship.errors import GpushipError, InputError
from gpuship.reference import Reference, Repository
from gpuship.registry.client import FetchedManifest, RegistryClient
from gpuship.registry.errors import NotFound, RegistryRequestError
from gpuship.registry.manifest import ImageIndex, parse_manifest

# The OCI error codes of a manifest PUT that references something the registry lacks.
_MISSING_CODES = frozenset({"MANIFEST_BLOB_UNKNOWN", "MANIFEST_UNKNOWN", "BLOB_UNKNOWN"})


class CandidateGone(InputError):
    """The image to release (or a manifest or blob it references) is not in the repository."""


def read_candidate(client: RegistryClient, source: Reference) -> FetchedManifest:
    """The image to release, by digest; CandidateGone if the repository does not hold it."""
    try:
        return client.get_manifest(source)
    except NotFound as error:
        raise CandidateGone(
            f"{source} is not in {source.repository} (never pushed, or deleted before the "
            f"release started, e.g. by retention): {error}"
        ) from None


def refused_as_missing(error: GpushipError) -> bool:
    """True if `error` is a registry's refusal for a manifest or blob it does not hold."""
    if isinstance(error, NotFound):
        return True
    return isinstance(error, RegistryRequestError) and bool(_MISSING_CODES & set(error.codes))


def missing_part(client: RegistryClient, repo: Repository, manifest: FetchedManifest) -> str:
    """What of `manifest` `repo` no longer holds, read now: the manifest itself, a child
    manifest of an index, or an image's config blob ("" when all are there)."""
    if client.head_manifest(repo.at(manifest.digest)) is None:
        return "it"
    document = parse_manifest(manifest.data, manifest.media_type)
    if isinstance(document, ImageIndex):
        for child in document.manifests:
            if client.head_manifest(repo.at(child.digest)) is None:
                return f"its child manifest {child.digest}"
    elif not client.blob_exists(repo, document.config.digest):
        return f"its config blob {document.config.digest}"
    return ""


def gone_while_running(source: Reference, repo: Repository, part: str) -> CandidateGone:
    """The error for a candidate (`part` of it: `missing_part`) deleted during the release."""
    return CandidateGone(
        f"{source}: {part} was deleted from {repo} while the release ran (e.g. by retention)"
    )
