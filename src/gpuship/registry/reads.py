"""Reading from a registry: manifests by tag or digest, blobs streamed or whole, each checked
against its digest (the one asked for, and the registry's `Docker-Content-Digest`); content
that does not match is read again (`retry.VERIFY_ATTEMPTS`)."""

from __future__ import annotations

from typing import NamedTuple

import requests

from gpuship.documents import load_json
from gpuship.errors import InputError, LimitExceeded, RegistryUnavailable
from gpuship.limits import DEFAULT_LIMITS, Limits
from gpuship.reference import (
    Reference,
    Repository,
    UnsupportedDigest,
    check_digest,
    content_matches,
    sha256_digest,
)
from gpuship.registry.blob import BlobReader
from gpuship.registry.errors import DigestMismatch, NotFound
from gpuship.registry.manifest import MANIFEST_MEDIA_TYPES
from gpuship.registry.retry import VERIFY_ATTEMPTS
from gpuship.registry.session import PULL, RegistrySession
from gpuship.registry.transport import document_of, ended_by_close

_ACCEPT = ", ".join(MANIFEST_MEDIA_TYPES)


class FetchedManifest(NamedTuple):
    """Manifest bytes exactly as served, their media type and their verified digest."""

    data: bytes
    media_type: str
    digest: str


class FetchedDescriptor(NamedTuple):
    """What a manifest HEAD tells: digest, media type and size."""

    digest: str
    media_type: str
    size: int


def _header_digest(response: requests.Response, what: str) -> str | None:
    """The `Docker-Content-Digest` of an answer, if it sent one: a digest gpuship can verify, or
    RegistryUnavailable (the registry's answer is at fault, not the user's input)."""
    value = response.headers.get("Docker-Content-Digest")
    if not value:
        return None
    try:
        return check_digest(value.strip(), f"Docker-Content-Digest of {what}")
    except UnsupportedDigest as error:
        raise RegistryUnavailable(f"registry answer unusable: {error}") from None


def _media_type(response: requests.Response, data: bytes | None) -> str:
    """The document's own `mediaType` when it has one (that is what a PUT must send), else the
    Content-Type without parameters."""
    if data:
        try:
            document = load_json(data, "manifest", DEFAULT_LIMITS)
        except InputError:
            document = None
        if isinstance(document, dict) and isinstance(document.get("mediaType"), str):
            return str(document["mediaType"])
    return response.headers.get("Content-Type", "").split(";", 1)[0].strip()


class RegistryReads(RegistrySession):
    """Manifests and blobs read and verified."""

    def get_manifest(self, ref: Reference) -> FetchedManifest:
        """GET a manifest by tag or digest, with its digest verified (read again if not)."""
        attempt = 0
        while True:
            attempt += 1
            try:
                return self._get_manifest_once(ref)
            except DigestMismatch:
                if attempt == VERIFY_ATTEMPTS:
                    raise

    def _get_manifest_once(self, ref: Reference) -> FetchedManifest:
        path = f"/v2/{ref.name}/manifests/{ref.identifier}"
        response = self._request(
            "GET",
            ref.repository,
            path,
            access={ref.name: PULL},
            ok=(200,),
            headers={"Accept": _ACCEPT},
            limit="manifest_max_bytes",
        )
        with response:
            data = response.content
            header_digest = _header_digest(response, f"GET {ref}")
            media_type = _media_type(response, data)
            if not (ref.digest or header_digest) and ended_by_close(response):
                with document_of(response) as body:  # nothing to verify it by: is it whole?
                    load_json(body, f"manifest {ref}", self.limits)
        for expected in (ref.digest, header_digest):
            if expected and not content_matches(data, expected):
                raise DigestMismatch(
                    f"manifest {ref} from {ref.registry} does not match digest {expected} "
                    f"(content is {sha256_digest(data)})"
                )
        digest = ref.digest or header_digest or sha256_digest(data)
        return FetchedManifest(data, media_type, digest)

    def head_manifest(self, ref: Reference) -> FetchedDescriptor | None:
        """HEAD a manifest: its digest, type and size, or None if it does not exist."""
        path = f"/v2/{ref.name}/manifests/{ref.identifier}"
        response = self._request(
            "HEAD",
            ref.repository,
            path,
            access={ref.name: PULL},
            ok=(200, 404),
            headers={"Accept": _ACCEPT},
        )
        with response:
            if response.status_code == 404:
                return None
            digest = _header_digest(response, f"HEAD {ref}")
            media_type = _media_type(response, None)
            length = response.headers.get("Content-Length", "")
        mismatch = ref.digest is not None and digest != ref.digest
        if not digest or not media_type or not length.isdigit() or mismatch:
            # Registries before distribution-spec `main` may omit the digest header on HEAD; a
            # header naming another digest than asked for is checked against the bytes.
            try:
                fetched = self.get_manifest(ref)
            except NotFound:
                return None
            return FetchedDescriptor(fetched.digest, fetched.media_type, len(fetched.data))
        return FetchedDescriptor(digest, media_type, int(length))

    def resolve_digest(self, ref: Reference) -> str:
        """The digest `ref` points at (HEAD, GET fallback); NotFound if it does not exist."""
        if ref.digest is not None:
            return ref.digest
        found = self.head_manifest(ref)
        if found is None:
            raise NotFound(f"{ref}: no such tag", status=404, codes=("MANIFEST_UNKNOWN",))
        return found.digest

    def blob_exists(self, repo: Repository, digest: str) -> bool:
        """True if `repo` holds blob `digest`."""
        response = self._request(
            "HEAD",
            repo,
            f"/v2/{repo.name}/blobs/{digest}",
            access={repo.name: PULL},
            ok=(200, 404),
        )
        response.close()
        return response.status_code == 200

    def open_blob(self, repo: Repository, digest: str) -> BlobReader:
        """Stream blob `digest`; the returned reader verifies the digest when it hits EOF."""
        check_digest(digest, f"blob in {repo}")  # before asking for what could not be verified
        response = self._request(
            "GET",
            repo,
            f"/v2/{repo.name}/blobs/{digest}",
            access={repo.name: PULL},
            ok=(200,),
            stream=True,
        )
        return BlobReader(response, digest, f"{repo}")

    def read_blob(self, repo: Repository, digest: str, limit: str = "json_max_bytes") -> bytes:
        """A small blob (a config, a record) read whole and verified, at most the bytes of the
        limit named `limit`. A stream that breaks or does not match its digest is read again
        (VERIFY_ATTEMPTS)."""
        cap: int = getattr(self.limits, limit)
        where = f"blob {digest} in {repo}"
        attempt = 0
        while True:
            attempt += 1
            try:
                with self.open_blob(repo, digest) as reader:
                    if reader.size is not None and reader.size > cap:
                        raise LimitExceeded(
                            where, f"it has {reader.size} bytes", Limits.key(limit), cap
                        )
                    chunks: list[bytes] = []
                    total = 0
                    for chunk in reader.iter_chunks():
                        total += len(chunk)
                        if total > cap:
                            raise LimitExceeded(
                                where, f"it is larger than {cap} bytes", Limits.key(limit), cap
                            )
                        chunks.append(chunk)
                return b"".join(chunks)
            except RegistryUnavailable:  # DigestMismatch and broken streams
                if attempt == VERIFY_ATTEMPTS:
                    raise
