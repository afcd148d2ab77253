"""Walk the headers of a tar stream, reading member contents only on request.

The stdlib `tarfile` reads pax and GNU long-name headers whole into memory with no bound, so a
hostile layer could make it allocate gigabytes; layers are also read exactly once, as a stream.
This reader keeps metadata headers under a fixed limit, verifies every header checksum, and
skips member contents in fixed-size chunks so memory stays flat whatever the layer holds.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from gpuship.errors import LimitExceeded
from gpuship.limits import DEFAULT_LIMITS, Limits

BLOCK = 512
_ZERO_BLOCK = bytes(BLOCK)
_ADLER_MOD = 65521
_SKIP_CHUNK = 1 << 20

REGULAR = "file"
DIRECTORY = "dir"
SYMLINK = "symlink"
HARDLINK = "hardlink"
OTHER = "other"

_KINDS = {
    b"0": REGULAR,
    b"\0": REGULAR,
    b"7": REGULAR,
    b"1": HARDLINK,
    b"2": SYMLINK,
    b"5": DIRECTORY,
}


class TarFormatError(Exception):
    """The stream is not a well-formed tar archive (message says where and why)."""


@dataclass(frozen=True)
class TarMember:
    """One archive member as its headers describe it."""

    name: str
    kind: str
    size: int
    linkname: str
    mode: int
    typeflag: str


def _nul_terminated(field: bytes) -> str:
    # Invalid UTF-8 is replaced, never kept as surrogates that would break JSON/SARIF output.
    return field.partition(b"\0")[0].decode("utf-8", "replace")


def _number(field: bytes, what: str, offset: int) -> int:
    try:  # the common form: octal digits, NUL- or space-terminated
        return int(field.partition(b"\0")[0], 8)
    except ValueError:
        pass
    if field and field[0] & 0x80:
        # GNU base-256: big-endian two's complement with the top bit as the marker.
        value = int.from_bytes(field, "big", signed=False) & ~(0x80 << (8 * (len(field) - 1)))
        if field[0] & 0x40:
            raise TarFormatError(f"negative {what} in tar header at byte {offset}")
        return value
    text = field.replace(b"\0", b" ").strip()
    if not text:
        return 0
    try:
        return int(text, 8)
    except ValueError:
        raise TarFormatError(f"invalid {what} field in tar header at byte {offset}") from None


def _checksum_ok(block: bytes) -> bool:
    stored = block[148:156].replace(b"\0", b" ").strip()
    if not stored:
        return False
    try:
        expected = int(stored, 8)
    except ValueError:
        return False
    unsigned = _byte_sum(block) - sum(block[148:156]) + 8 * 32
    if expected == unsigned:
        return True
    # Some old tar writers summed signed chars; only checked when the common form fails.
    high = sum(1 for b in block[:148] + block[156:] if b > 127)
    return expected == unsigned - 256 * high


def _byte_sum(block: bytes) -> int:
    """The sum of a header's bytes, in C: adler32's low half is 1 + the byte sum modulo
    65521, exact for 256 bytes (at most 65280), so two halves give the sum of 512."""
    low = zlib.adler32(block[:256]) & 0xFFFF
    high = zlib.adler32(block[256:]) & 0xFFFF
    return (low - 1) % _ADLER_MOD + (high - 1) % _ADLER_MOD


def _parse_pax(data: bytes, offset: int) -> dict[str, str]:
    records: dict[str, str] = {}
    pos = 0
    while pos < len(data):
        space = data.find(b" ", pos)
        if space < 0:
            break
        try:
            length = int(data[pos:space])
        except ValueError:
            raise TarFormatError(f"invalid pax record in tar header at byte {offset}") from None
        if length <= 0 or pos + length > len(data):
            raise TarFormatError(f"invalid pax record length in tar header at byte {offset}")
        record = data[space + 1 : pos + length]
        key, sep, value = record.rstrip(b"\n").partition(b"=")
        if sep:
            records[key.decode("utf-8", "replace")] = value.decode("utf-8", "replace")
        pos += length
    return records


def _names(
    block: bytes, pax: dict[str, str], long_name: str | None, long_link: str | None
) -> tuple[str, str]:
    """A member's name and link target: a pax record, else a GNU long name, else the header's
    own fields (ustar splits a long name into prefix and name)."""
    name = _nul_terminated(block[0:100])
    if block[257:263] == b"ustar\0":
        prefix = _nul_terminated(block[345:500])
        if prefix:
            name = f"{prefix}/{name}"
    linkname = _nul_terminated(block[157:257])
    name = pax.get("path", long_name if long_name is not None else name)
    linkname = pax.get("linkpath", long_link if long_link is not None else linkname)
    return name, linkname


def _pax_size(pax: dict[str, str], size: int, offset: int) -> int:
    """A pax `size` record overrides the header's size field (members over 8 GiB)."""
    if "size" not in pax:
        return size
    try:
        return int(pax["size"])
    except ValueError:
        raise TarFormatError(f"invalid pax size at byte {offset}") from None


class TarWalker:
    """Iterate the members of a tar stream; `read_content` reads the current member's data.

    Content not read by the caller is skipped before the next header is parsed.
    """

    def __init__(
        self,
        stream: BinaryIO,
        *,
        max_metadata_bytes: int = DEFAULT_LIMITS.tar_header_max_bytes,
    ) -> None:
        self._stream = stream
        self._max_metadata = max_metadata_bytes
        self._offset = 0
        self._remaining = 0  # unread bytes of the current member's data
        self._padding = 0
        self._scratch = bytearray(_SKIP_CHUNK)
        self._end: int | None = None
        if getattr(stream, "seekable", lambda: False)():
            here = stream.tell()
            self._end = stream.seek(0, 2)
            stream.seek(here)

    @property
    def offset(self) -> int:
        """Bytes of the tar stream consumed so far."""
        return self._offset

    def _read_exact(self, size: int) -> bytes:
        data = self._stream.read(size)  # buffered streams return it whole but at the end
        if len(data) == size or not data:
            self._offset += len(data)
            return data
        parts: list[bytes] = [data]
        missing = size - len(data)
        while missing > 0:
            chunk = self._stream.read(missing)
            if not chunk:
                break
            parts.append(chunk)
            missing -= len(chunk)
        data = b"".join(parts)
        self._offset += len(data)
        return data

    def _skip(self, size: int) -> None:
        if size > BLOCK and self._end is not None:
            # Archives on disk (docker-archive) skip member data without reading it.
            if self._stream.tell() + size > self._end:
                raise TarFormatError(
                    f"tar stream truncated at byte {self._offset}: {size} bytes of data missing"
                )
            self._stream.seek(size, 1)
            self._offset += size
            return
        view = memoryview(self._scratch)
        while size > 0:
            want = min(size, len(view))
            got = self._stream.readinto(view[:want])  # type: ignore[attr-defined]
            if not got:
                raise TarFormatError(
                    f"tar stream truncated at byte {self._offset}: {size} bytes of data missing"
                )
            size -= got
            self._offset += got

    def read_content(self, size: int) -> bytes:
        """Read up to `size` more bytes of the current member (fewer at its end)."""
        size = min(size, self._remaining)
        data = self._read_exact(size)
        if len(data) < size:
            raise TarFormatError(f"tar stream truncated inside a member at byte {self._offset}")
        self._remaining -= len(data)
        return data

    def readinto_content(self, buffer: memoryview) -> int:
        """Read the current member's data into `buffer`; 0 at the member's end."""
        want = min(len(buffer), self._remaining)
        if want == 0:
            return 0
        got: int = self._stream.readinto(buffer[:want])  # type: ignore[attr-defined]
        if not got:
            raise TarFormatError(f"tar stream truncated inside a member at byte {self._offset}")
        self._remaining -= got
        self._offset += got
        return got

    def _finish_member(self) -> None:
        self._skip(self._remaining + self._padding)
        self._remaining = 0
        self._padding = 0

    def _read_metadata(self, size: int, what: str) -> bytes:
        if size > self._max_metadata:
            # Pax records and GNU long names are paths and a few attributes; a bound keeps a
            # hostile header from exhausting memory.
            raise LimitExceeded(
                f"tar header at byte {self._offset}",
                f"{what} of {size} bytes",
                Limits.key("tar_header_max_bytes"),
                self._max_metadata,
            )
        data = self._read_exact(size)
        if len(data) < size:
            raise TarFormatError(f"tar stream truncated inside a {what} at byte {self._offset}")
        self._skip(-size % BLOCK)
        return data

    def members(self) -> Iterator[TarMember]:
        """Yield members in archive order until the end-of-archive marker or end of stream."""
        pax: dict[str, str] = {}
        long_name: str | None = None
        long_link: str | None = None
        while (header := self._next_header()) is not None:
            block, header_at = header
            typeflag = block[156:157]
            size = _number(block[124:136], "size", header_at)
            if typeflag in (b"x", b"X"):
                pax = _parse_pax(self._read_metadata(size, "pax header"), header_at)
                continue
            if typeflag == b"g":
                self._read_metadata(size, "pax global header")
                continue
            if typeflag == b"L":
                long_name = _nul_terminated(self._read_metadata(size, "GNU long name"))
                continue
            if typeflag == b"K":
                long_link = _nul_terminated(self._read_metadata(size, "GNU long link"))
                continue
            name, linkname = _names(block, pax, long_name, long_link)
            size = _pax_size(pax, size, header_at)
            pax, long_name, long_link = {}, None, None
            kind = _KINDS.get(typeflag, OTHER)
            # Links, directories and devices carry no data whatever the size field says
            # (POSIX); GNU sparse members store `size` bytes of map and data.
            data_size = size if kind == REGULAR or typeflag == b"S" else 0
            self._remaining = data_size
            self._padding = -data_size % BLOCK
            yield TarMember(
                name=name,
                kind=kind,
                size=size if kind == REGULAR else 0,
                linkname=linkname,
                mode=_number(block[100:108], "mode", header_at),
                typeflag=typeflag.decode("latin-1"),
            )

    def _next_header(self) -> tuple[bytes, int] | None:
        """The next header block and its offset, past the current member's data; None at the
        end of the archive."""
        if self._remaining or self._padding:
            self._finish_member()
        header_at = self._offset
        block = self._read_exact(BLOCK)
        if len(block) < BLOCK:
            if not block:
                return None  # no end-of-archive marker; tolerated like GNU tar does
            raise TarFormatError(f"tar stream truncated inside a header at byte {header_at}")
        if block == _ZERO_BLOCK:
            return None
        if not _checksum_ok(block):
            raise TarFormatError(f"tar header checksum mismatch at byte {header_at}")
        return block, header_at
