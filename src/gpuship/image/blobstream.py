"""Read a layer blob once: check its size and digest, decompress it, hash the tar inside.

A layer is never trusted before its bytes hash to the digest the manifest names, and a blob
longer or shorter than the manifest claims is an error, so a lying manifest cannot make the
reader run forever or pass off other content. gzip goes through `isal` (several times faster
than zlib) when installed, with the stdlib as fallback; zstd through `zstandard`.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, BinaryIO

from gpuship.errors import LimitExceeded
from gpuship.limits import DEFAULT_LIMITS, Limits
from gpuship.reference import UnsupportedDigest, digest_hash

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_BUFFER = 1 << 20
# isal reads 8 blocks ahead; 256 KiB blocks keep that at 2 MiB per layer being scanned.
_GZIP_BLOCK = 256 << 10


class BlobError(Exception):
    """A blob does not match what its manifest says, or cannot be decompressed."""


def _new_hash(digest: str, name: str) -> tuple[Any, str]:
    try:
        return digest_hash(digest, name), digest.partition(":")[2]
    except UnsupportedDigest as error:
        raise BlobError(str(error)) from None


class VerifiedReader(io.RawIOBase):
    """Raw blob bytes, hashed and counted; never reads past the size the manifest declares.

    `finish()` drains what the consumer left, then checks size and digest.
    """

    def __init__(
        self,
        raw: BinaryIO,
        *,
        digest: str | None,
        size: int | None,
        name: str,
    ) -> None:
        super().__init__()
        self._raw = raw
        self._name = name
        self._size = size
        self._digest = digest
        self._hash: Any = None
        self._expected = ""
        if digest:
            self._hash, self._expected = _new_hash(digest, name)
        self.bytes_read = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        if self._size is not None:
            # One byte past the declared size is enough to prove the manifest wrong.
            allowed = self._size + 1 - self.bytes_read
            if allowed <= 0:
                return 0
            view = view[:allowed]
        got = self._raw.readinto(view)  # type: ignore[attr-defined]
        if not got:
            return 0
        if self._hash is not None:
            self._hash.update(view[:got])
        self.bytes_read += got
        if self._size is not None and self.bytes_read > self._size:
            raise BlobError(
                f"{self._name}: blob is larger than the {self._size} bytes its manifest declares"
            )
        return int(got)

    def finish(self) -> None:
        """Read any rest of the blob, then verify its length and digest."""
        scratch = bytearray(_BUFFER)
        while self.readinto(scratch):
            pass
        if self._size is not None and self.bytes_read != self._size:
            raise BlobError(
                f"{self._name}: blob has {self.bytes_read} bytes, its manifest declares "
                f"{self._size}"
            )
        if self._hash is not None and self._hash.hexdigest() != self._expected:
            raise BlobError(
                f"{self._name}: content does not match digest {self._digest} "
                f"(hashes to {self._hash.name}:{self._hash.hexdigest()})"
            )


class HashingReader(io.RawIOBase):
    """Passes decompressed bytes through sha256 (the layer's diff_id) and counts them.

    It stops a decompression bomb: past `layer-max-bytes`, or past `layer-ratio-after-bytes`
    with more than `layer-max-ratio` decompressed bytes per compressed byte read so far, it
    raises LimitExceeded instead of decompressing on (20 GB of zeros is 20 MB of gzip).
    """

    def __init__(
        self,
        inner: BinaryIO,
        *,
        compressed: VerifiedReader | None = None,
        limits: Limits = DEFAULT_LIMITS,
        name: str = "layer",
    ) -> None:
        super().__init__()
        self._inner = inner
        self._hash = hashlib.sha256()
        self._compressed = compressed
        self._limits = limits
        self._name = name
        self.bytes_read = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        got = self._inner.readinto(view)  # type: ignore[attr-defined]
        if not got:
            return 0
        self._hash.update(view[:got])
        self.bytes_read += got
        self._check_limits()
        return int(got)

    def _check_limits(self) -> None:
        limits = self._limits
        if self.bytes_read > limits.layer_max_bytes:
            raise LimitExceeded(
                self._name,
                f"decompresses to more than {limits.layer_max_bytes} bytes",
                Limits.key("layer_max_bytes"),
                limits.layer_max_bytes,
            )
        if self._compressed is None or self.bytes_read <= limits.layer_ratio_after_bytes:
            return
        compressed = max(self._compressed.bytes_read, 1)
        if self.bytes_read > limits.layer_max_ratio * compressed:
            raise LimitExceeded(
                self._name,
                f"decompresses to {self.bytes_read} bytes from the first {compressed} "
                "compressed bytes (a decompression bomb?)",
                Limits.key("layer_max_ratio"),
                limits.layer_max_ratio,
            )

    @property
    def digest(self) -> str:
        return f"sha256:{self._hash.hexdigest()}"

    def drain(self) -> None:
        """Read to the end (tar padding after the end-of-archive blocks counts too)."""
        scratch = bytearray(_BUFFER)
        while self.readinto(scratch):
            pass


def detect_compression(head: bytes) -> str:
    """`gzip`, `zstd` or `none` from a blob's first bytes."""
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    if head.startswith(ZSTD_MAGIC):
        return "zstd"
    return "none"


def _open_gzip(stream: BinaryIO) -> BinaryIO:
    try:
        from isal import igzip_threaded
    except ImportError:
        return gzip.GzipFile(fileobj=stream, mode="rb")  # type: ignore[return-value]
    # One worker thread decompresses ahead while this thread walks the tar.
    return igzip_threaded.open(  # type: ignore[no-untyped-call,no-any-return]
        stream, "rb", threads=1, block_size=_GZIP_BLOCK
    )


def _open_zstd(stream: BinaryIO) -> BinaryIO:
    import zstandard

    reader = zstandard.ZstdDecompressor().stream_reader(stream, read_across_frames=True)
    return reader


# Errors the decompressors raise for corrupt or truncated input.
_DECOMPRESS_ERRORS: tuple[type[BaseException], ...] = (EOFError, OSError, zlib.error, ValueError)


def decompress_errors() -> tuple[type[BaseException], ...]:
    """Exception types that mean the compressed stream is corrupt or truncated."""
    extra: list[type[BaseException]] = []
    try:
        from isal import isal_zlib

        extra.append(isal_zlib.error)  # type: ignore[arg-type]
    except ImportError:
        pass
    try:
        import zstandard

        extra.append(zstandard.ZstdError)
    except ImportError:
        pass
    return (*_DECOMPRESS_ERRORS, *extra)


@dataclass
class LayerStream:
    """An open layer: `tar` to walk, plus the readers that check it afterwards."""

    tar: io.BufferedReader
    uncompressed: HashingReader
    verified: VerifiedReader
    compression: str

    def finish(self) -> None:
        """Consume the rest of the blob and verify it; call after the tar walk."""
        # Bytes buffered in `tar` but not walked are already hashed by `uncompressed`.
        self.uncompressed.drain()
        self.verified.finish()


@contextmanager
def open_layer(
    raw: BinaryIO,
    *,
    digest: str | None,
    size: int | None,
    name: str,
    limits: Limits = DEFAULT_LIMITS,
) -> Iterator[LayerStream]:
    """Open one blob for a single pass: sniff compression, decompress, hash both sides."""
    verified = VerifiedReader(raw, digest=digest, size=size, name=name)
    buffered = io.BufferedReader(verified, buffer_size=_BUFFER)
    compression = detect_compression(buffered.peek(4)[:4])
    inner: BinaryIO
    if compression == "gzip":
        inner = _open_gzip(buffered)
    elif compression == "zstd":
        inner = _open_zstd(buffered)
    else:
        inner = buffered
    uncompressed = HashingReader(inner, compressed=verified, limits=limits, name=name)
    try:
        yield LayerStream(
            tar=io.BufferedReader(uncompressed, buffer_size=_BUFFER),
            uncompressed=uncompressed,
            verified=verified,
            compression=compression,
        )
    finally:
        if inner is not buffered:
            inner.close()
