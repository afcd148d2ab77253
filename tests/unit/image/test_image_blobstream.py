"""One pass over a blob: digest and size checked, gzip/zstd/plain decompressed."""

from __future__ import annotations

import gzip
import hashlib
import io

import pytest
import zstandard

from gpuship.image.blobstream import BlobError, decompress_errors, open_layer

PAYLOAD = b"layer bytes " * 50_000


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _consume(blob: bytes, *, digest: str | None, size: int | None) -> tuple[str, str, int]:
    with open_layer(io.BytesIO(blob), digest=digest, size=size, name="t") as layer:
        data = layer.tar.read()
        layer.finish()
        assert data == PAYLOAD
        return layer.compression, layer.uncompressed.digest, layer.verified.bytes_read


@pytest.mark.parametrize(
    ("compress", "kind"),
    [
        (lambda d: gzip.compress(d, mtime=0), "gzip"),
        (lambda d: zstandard.ZstdCompressor().compress(d), "zstd"),
        (lambda d: d, "none"),
    ],
)
def test_each_compression_is_read_and_verified(compress, kind) -> None:  # type: ignore[no-untyped-def]
    blob = compress(PAYLOAD)
    compression, diff_id, read = _consume(blob, digest=_digest(blob), size=len(blob))
    assert compression == kind
    assert diff_id == _digest(PAYLOAD)
    assert read == len(blob)


def test_digest_mismatch_is_an_error() -> None:
    blob = gzip.compress(PAYLOAD)
    with pytest.raises(BlobError, match="does not match digest"):
        _consume(blob, digest=_digest(blob + b"x"), size=len(blob))


def test_blob_larger_than_manifest_says_is_an_error() -> None:
    blob = gzip.compress(PAYLOAD)
    with pytest.raises(BlobError, match="larger than"):
        _consume(blob, digest=_digest(blob), size=len(blob) - 10)


def test_blob_shorter_than_manifest_says_is_an_error() -> None:
    blob = gzip.compress(PAYLOAD)
    with pytest.raises(BlobError, match="manifest declares"):
        _consume(blob, digest=_digest(blob), size=len(blob) + 10)


def test_truncated_gzip_raises_a_decompression_error() -> None:
    blob = gzip.compress(PAYLOAD)[:-100]
    with pytest.raises(decompress_errors()):
        _consume(blob, digest=None, size=None)


def test_corrupt_gzip_raises_a_decompression_error() -> None:
    blob = bytearray(gzip.compress(PAYLOAD))
    blob[len(blob) // 2 : len(blob) // 2 + 64] = bytes(64)
    with pytest.raises(decompress_errors()):
        _consume(bytes(blob), digest=None, size=None)


def test_stdlib_gzip_is_the_fallback_without_isal(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "isal", None)  # `import isal` now raises ImportError
    blob = gzip.compress(PAYLOAD, mtime=0)
    compression, diff_id, _ = _consume(blob, digest=_digest(blob), size=len(blob))
    assert (compression, diff_id) == ("gzip", _digest(PAYLOAD))
    with pytest.raises(decompress_errors()):
        _consume(blob[:-100], digest=None, size=None)
