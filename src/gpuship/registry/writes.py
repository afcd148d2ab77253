"""Writing to a registry: blobs pushed, uploaded, mounted or copied, manifests put under a tag
or digest (tagging is a manifest PUT) and deleted.

The registry's answer to a write can be lost or garbled; what is then tried again is listed in
`retry.py`: a blob push looks for the blob first, a manifest PUT is sent again, a copy starts
over.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import BinaryIO

from gpuship.errors import RegistryUnavailable
from gpuship.reference import Reference, Repository, sha256_digest
from gpuship.registry.blob import BlobReader
from gpuship.registry.errors import DigestMismatch, RegistryAuthError, RegistryRequestError
from gpuship.registry.origin import header_url
from gpuship.registry.reads import RegistryReads
from gpuship.registry.retry import VERIFY_ATTEMPTS
from gpuship.registry.session import DELETE, PULL, PUSH

DEFAULT_CHUNK_SIZE = 16 << 20


class RegistryWrites(RegistryReads):
    """Blobs and manifests written, tags set and removed."""

    def put_manifest(self, ref: Reference, data: bytes, media_type: str) -> str:
        """PUT exact manifest bytes under `ref.identifier` (tag or digest); return the digest.

        An answer naming another digest is sent again (the PUT is idempotent) before it is
        an error: one garbled answer says nothing about what was stored.
        """
        digest = sha256_digest(data)
        if ref.digest is not None and ref.digest != digest:
            raise DigestMismatch(f"refusing to PUT bytes hashing to {digest} as {ref.digest}")
        path = f"/v2/{ref.name}/manifests/{ref.identifier}"
        for _ in range(VERIFY_ATTEMPTS):
            response = self._request(
                "PUT",
                ref.repository,
                path,
                access={ref.name: PUSH},
                ok=(200, 201, 202),
                data=data,
                headers={"Content-Type": media_type},
            )
            with response:
                answered = response.headers.get("Docker-Content-Digest")
            if not answered or answered == digest:
                return digest
        raise DigestMismatch(
            f"registry {ref.registry} stored {ref} as {answered}, expected {digest}"
        )

    def delete_manifest(self, ref: Reference) -> None:
        """DELETE a manifest by digest (or a tag, on registries that support tag deletion)."""
        path = f"/v2/{ref.name}/manifests/{ref.identifier}"
        self._request(
            "DELETE", ref.repository, path, access={ref.name: DELETE}, ok=(200, 202, 204)
        ).close()

    def mount_blob(self, repo: Repository, digest: str, source: Repository) -> bool:
        """Cross-repository mount in one registry: True if mounted, False if declined."""
        response = self._request(
            "POST",
            repo,
            f"/v2/{repo.name}/blobs/uploads/",
            access={repo.name: PUSH, source.name: PULL},
            ok=(201, 202),
            params={"mount": digest, "from": source.name},
        )
        with response:
            if response.status_code == 201:
                return True
            location = response.headers.get("Location")
        if location:
            self._cancel_upload(repo, location)
        return False

    def _cancel_upload(self, repo: Repository, location: str) -> None:
        # Best effort: an abandoned upload session is purged by the registry anyway.
        try:
            self._request(
                "DELETE",
                repo,
                self._absolute(repo, location),
                access={repo.name: PUSH},
                ok=(200, 202, 204, 404, 405),
            ).close()
        except (RegistryRequestError, RegistryUnavailable):
            return

    def _absolute(self, repo: Repository, location: str) -> str:
        return header_url(self.base_url(repo) + "/", location, "Location")

    def push_blob(self, repo: Repository, data: bytes) -> str:
        """Upload a small blob held in memory; returns its digest.

        One POST carrying the content and its digest (distribution-spec end-4b); a registry
        that opens a session instead (202) gets the content with a PUT. If that fails, the
        blob may still have landed (an answer lost): it is looked for before trying again.
        """
        digest = sha256_digest(data)
        attempt = 0
        while True:
            attempt += 1
            try:
                self._push_blob_once(repo, data, digest)
                return digest
            except (RegistryUnavailable, RegistryRequestError) as error:
                if isinstance(error, RegistryAuthError):
                    raise
                if self.blob_exists(repo, digest):
                    return digest
                if attempt == VERIFY_ATTEMPTS:
                    raise

    def _push_blob_once(self, repo: Repository, data: bytes, digest: str) -> None:
        response = self._request(
            "POST",
            repo,
            f"/v2/{repo.name}/blobs/uploads/",
            access={repo.name: PUSH},
            ok=(201, 202),
            params={"digest": digest},
            data=data,
            headers={"Content-Type": "application/octet-stream"},
        )
        with response:
            if response.status_code == 201:
                return
            location = response.headers.get("Location")
        if not location:
            raise RegistryRequestError(
                f"registry {repo.registry} opened an upload without a Location", status=202
            )
        self._request(
            "PUT",
            repo,
            self._absolute(repo, location),
            access={repo.name: PUSH},
            ok=(201,),
            params={"digest": digest},
            data=data,
            headers={"Content-Type": "application/octet-stream"},
        ).close()

    def upload_blob(
        self,
        repo: Repository,
        digest: str,
        stream: BinaryIO | BlobReader,
        size: int | None,
        *,
        chunk_size: int | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> None:
        """Upload a blob: monolithic (one PUT) without `chunk_size`, else chunked PATCHes."""
        response = self._request(
            "POST",
            repo,
            f"/v2/{repo.name}/blobs/uploads/",
            access={repo.name: PUSH},
            ok=(202,),
        )
        with response:
            location = response.headers.get("Location")
        if not location:
            raise RegistryRequestError(
                f"registry {repo.registry} opened an upload without a Location", status=202
            )
        location = self._absolute(repo, location)
        if chunk_size is None:
            if size is None:
                raise RegistryRequestError(
                    f"monolithic upload of {digest} needs its size", status=0
                )
            self._request(
                "PUT",
                repo,
                location,
                access={repo.name: PUSH},
                ok=(201,),
                params={"digest": digest},
                data=_Body(stream, size, progress),
                headers={"Content-Type": "application/octet-stream"},
            ).close()
            return
        offset = 0
        while True:
            chunk = stream.read(chunk_size)
            if not chunk:
                break
            response = self._request(
                "PATCH",
                repo,
                location,
                access={repo.name: PUSH},
                ok=(202,),
                data=chunk,
                headers={
                    "Content-Type": "application/octet-stream",
                    "Content-Range": f"{offset}-{offset + len(chunk) - 1}",
                },
            )
            with response:
                location = self._absolute(repo, response.headers.get("Location") or location)
            offset += len(chunk)
            if progress is not None:
                progress(len(chunk))
        self._request(
            "PUT",
            repo,
            location,
            access={repo.name: PUSH},
            ok=(201,),
            params={"digest": digest},
            data=b"",
            headers={"Content-Type": "application/octet-stream"},
        ).close()

    def copy_blob(
        self,
        source: Repository,
        target: Repository,
        digest: str,
        *,
        attempts: int = 3,
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        progress: Callable[[int], None] | None = None,
    ) -> str:
        """Make `target` hold blob `digest` from `source`: "exists", "mounted" or "copied".

        Same registry: a cross-repository mount straight away (one request; a registry answers
        201 for a blob the target already has too). Otherwise, unless the target has it, the
        blob is streamed from source to target in chunks, restarted from the beginning if
        either side fails mid-way.
        """
        if source.registry == target.registry and self.mount_blob(target, digest, source):
            return "mounted"
        if self.blob_exists(target, digest):
            return "exists"
        attempt = 0
        while True:
            attempt += 1
            try:
                with self.open_blob(source, digest) as reader:
                    self.upload_blob(
                        target,
                        digest,
                        reader,
                        reader.size,
                        chunk_size=chunk_size,
                        progress=progress,
                    )
                return "copied"
            except RegistryAuthError:
                raise
            except (RegistryUnavailable, RegistryRequestError):
                # A broken stream or a half-written upload session: start the blob over.
                if attempt == attempts:
                    raise


class _Body:
    """Request body streamed from a reader in 1 MiB pieces with a known length.

    Only `__iter__` and `__len__`: requests then sets Content-Length and http.client sends the
    pieces as they are (it would read a file-like object 8 KiB at a time).
    """

    def __init__(
        self, stream: BinaryIO | BlobReader, size: int, progress: Callable[[int], None] | None
    ) -> None:
        self._stream = stream
        self._size = size
        self._progress = progress

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[bytes]:
        while chunk := self._stream.read(1 << 20):
            if self._progress is not None:
                self._progress(len(chunk))
            yield chunk
