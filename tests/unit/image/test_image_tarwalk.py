"""The streaming tar reader against archives written by the stdlib tarfile module."""

from __future__ import annotations

import io
import tarfile

import pytest

from gpuship.errors import LimitExceeded
from gpuship.image.tarwalk import DIRECTORY, HARDLINK, REGULAR, SYMLINK, TarFormatError, TarWalker


def _tar(members: list[tuple[tarfile.TarInfo, bytes]], fmt: int = tarfile.PAX_FORMAT) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=fmt) as archive:
        for info, data in members:
            info.size = len(data) if info.type == tarfile.REGTYPE else 0
            archive.addfile(info, io.BytesIO(data) if data else None)
    return buffer.getvalue()


def _info(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    return info


def test_walks_every_kind_and_reads_content_on_request() -> None:
    long_name = "deep/" + "x" * 150 + "/weights.bin"
    data = _tar(
        [
            (_info("etc", tarfile.DIRTYPE), b""),
            (_info("etc/hosts"), b"127.0.0.1 localhost\n"),
            (_info(long_name), b"A" * 5000),
            (_info("etc/link", tarfile.SYMTYPE, "hosts"), b""),
            (_info("etc/hard", tarfile.LNKTYPE, "etc/hosts"), b""),
        ]
    )
    walker = TarWalker(io.BytesIO(data))
    seen = []
    for member in walker.members():
        content = walker.read_content(10) if member.name == "etc/hosts" else b""
        seen.append((member.name, member.kind, member.size, member.linkname, content))
    assert seen == [
        ("etc/", DIRECTORY, 0, "", b""),  # tarfile writes directories with a slash
        ("etc/hosts", REGULAR, 20, "", b"127.0.0.1 "),
        (long_name, REGULAR, 5000, "", b""),
        ("etc/link", SYMLINK, 0, "hosts", b""),
        ("etc/hard", HARDLINK, 0, "etc/hosts", b""),
    ]


@pytest.mark.parametrize("fmt", [tarfile.GNU_FORMAT, tarfile.USTAR_FORMAT])
def test_gnu_and_ustar_long_names(fmt: int) -> None:
    name = "a" * 90 + "/" + "b" * 90 + "/file"
    data = _tar([(_info(name), b"123")], fmt=fmt)
    assert [m.name for m in TarWalker(io.BytesIO(data)).members()] == [name]


def test_checksum_mismatch_is_an_error() -> None:
    data = bytearray(_tar([(_info("file"), b"x")]))
    first_header = 0 if data[156:157] != b"x" else 1024
    data[first_header + 10] ^= 0xFF
    with pytest.raises(TarFormatError, match="checksum"):
        list(TarWalker(io.BytesIO(bytes(data))).members())


def test_truncated_member_is_an_error() -> None:
    data = _tar([(_info("file"), b"y" * 4096)])
    with pytest.raises(TarFormatError, match="truncated"):
        list(TarWalker(io.BytesIO(data[:2048])).members())


def test_pax_header_at_the_limit_and_past_it() -> None:
    info = _info("file")
    info.pax_headers = {"comment": "z" * 5000}
    data = _tar([(info, b"1")])
    pax_size = int(data[124:136].rstrip(b"\0 "), 8)
    assert [m.name for m in TarWalker(io.BytesIO(data), max_metadata_bytes=pax_size).members()]
    with pytest.raises(LimitExceeded, match=r"pax header of \d+ bytes \(limit limits.tar-header"):
        list(TarWalker(io.BytesIO(data), max_metadata_bytes=pax_size - 1).members())


def test_missing_end_of_archive_marker_is_tolerated() -> None:
    data = _tar([(_info("a"), b"1"), (_info("b"), b"2")])
    cut = 512 * 4  # two members of one header + one data block each
    assert [m.name for m in TarWalker(io.BytesIO(data[:cut])).members()] == ["a", "b"]
