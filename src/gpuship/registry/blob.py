"""A blob being streamed from a registry, checked against its digest when the stream ends."""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import requests
import urllib3

from gpuship.errors import RegistryUnavailable
from gpuship.reference import digest_hash
from gpuship.registry.errors import DigestMismatch
from gpuship.registry.transport import ended_by_close


class BlobReader(io.RawIOBase):
    """Read-only, non-seekable stream of one blob.

    Every byte passes through the digest's hash; at end of stream the hash (and the length, when
    the registry announced one) must match or DigestMismatch is raised, so a consumer that reads
    to EOF never silently accepts corrupted content.
    """

    def __init__(self, response: requests.Response, digest: str, where: str) -> None:
        super().__init__()
        self._expected_hex = digest.partition(":")[2]
        self._hash = digest_hash(digest, f"blob in {where}")
        self._response = response
        self._digest = digest
        self._where = where
        self._read = 0
        self._verified = False
        length = response.headers.get("Content-Length")
        self.size: int | None = int(length) if length and length.isdigit() else None

    @property
    def bytes_read(self) -> int:
        """How many bytes were read so far."""
        return self._read

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        try:
            chunk = self._response.raw.read(len(view), decode_content=True)
        except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as error:
            raise RegistryUnavailable(
                f"blob {self._digest} from {self._where}: stream broke after "
                f"{self._read} bytes ({type(error).__name__})"
            ) from None
        if not chunk:
            self._verify()
            return 0
        view[: len(chunk)] = chunk
        self._hash.update(chunk)
        self._read += len(chunk)
        return len(chunk)

    def iter_chunks(self, size: int = 1 << 20) -> Iterator[bytes]:
        """Yield the blob in chunks of at most `size` bytes, verifying at the end."""
        while True:
            chunk = self.read(size)
            if not chunk:
                return
            yield chunk

    def _verify(self) -> None:
        if self._verified:
            return
        if self.size is not None and self._read != self.size:
            raise DigestMismatch(
                f"blob {self._digest} from {self._where}: got {self._read} of {self.size} bytes"
            )
        if self._hash.hexdigest() != self._expected_hex and ended_by_close(self._response):
            # No length to hold the stream to: it ended where the connection closed.
            raise DigestMismatch(
                f"blob {self._digest} from {self._where}: the stream ended with its "
                f"connection after {self._read} bytes, before the content matched its digest "
                "(cut short or stalled)"
            )
        if self._hash.hexdigest() != self._expected_hex:
            raise DigestMismatch(
                f"blob {self._digest} from {self._where} does not match its digest "
                f"(content hashes to {self._hash.name}:{self._hash.hexdigest()})"
            )
        self._verified = True

    def close(self) -> None:
        if not self.closed:
            self._response.close()
        super().close()
