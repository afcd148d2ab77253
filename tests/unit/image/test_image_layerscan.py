"""One layer scanned from a real tar stream: entries, unsafe paths, links, content probes."""

from __future__ import annotations

import gzip
import hashlib
import io
import random
import tarfile
import zlib
from pathlib import Path

import pytest

from gpuship.image.layerscan import (
    LIMIT_PROBLEM,
    EntryBudget,
    LayerError,
    normalize_member_path,
    scan_layer,
)
from gpuship.limits import DEFAULT_LIMITS


def _tar(members: list[tuple[str, bytes, bytes, str]]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        for name, kind, data, link in members:
            info = tarfile.TarInfo(name)
            info.type = kind
            info.linkname = link
            info.size = len(data) if kind == tarfile.REGTYPE else 0
            archive.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)
    return buffer.getvalue()


def _scan(blob: bytes, tmp_path: Path, **kwargs: object):  # type: ignore[no-untyped-def]
    digest = "sha256:" + hashlib.sha256(blob).hexdigest()
    return scan_layer(
        io.BytesIO(blob), index=0, digest=digest, size=len(blob), tmpdir=tmp_path, **kwargs
    )


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("./usr/bin/x", ("usr/bin/x", None)),
        ("/etc/passwd", ("etc/passwd", "absolute path")),
        ("a/../b", ("b", "path contains '..'")),
        ("../../etc/shadow", (None, "path escapes the image root with '..'")),
        ("./", ("", None)),
    ],
)
def test_member_paths(name: str, expected: tuple[str | None, str | None]) -> None:
    assert normalize_member_path(name) == expected


def test_scan_lists_entries_and_reports_problems(tmp_path: Path, nvcc_library: Path) -> None:
    version_py = b"__version__ = '2.5.1'\ncuda: Optional[str] = '12.4'\n"
    blob = gzip.compress(
        _tar(
            [
                ("opt/model.gguf", tarfile.REGTYPE, b"GGUF" + bytes(100), ""),
                ("usr/lib/python3/site-packages/torch/version.py", tarfile.REGTYPE, version_py, ""),
                ("usr/lib/libscale.so", tarfile.REGTYPE, nvcc_library.read_bytes(), ""),
                ("../escape", tarfile.REGTYPE, b"x", ""),
                ("loop-a", tarfile.LNKTYPE, b"", "loop-b"),
                ("loop-b", tarfile.LNKTYPE, b"", "loop-a"),
                ("self", tarfile.LNKTYPE, b"", "self"),
            ]
        ),
        mtime=0,
    )
    scan = _scan(blob, tmp_path)
    assert [e.path for e in scan.entries] == [
        "opt/model.gguf",
        "usr/lib/python3/site-packages/torch/version.py",
        "usr/lib/libscale.so",
        "loop-a",
        "loop-b",
        "self",
    ]
    assert [(w.path, w.format, w.size) for w in scan.weights] == [("opt/model.gguf", "gguf", 104)]
    assert scan.texts == {"usr/lib/python3/site-packages/torch/version.py": version_py.decode()}
    assert [(b.path, sorted(b.code.sass)) for b in scan.gpu_binaries] == [
        ("usr/lib/libscale.so", ["sm_75", "sm_80", "sm_90"])
    ]
    kinds = sorted((p.kind, p.path) for p in scan.problems)
    # loop-b -> loop-a is an earlier entry, so only loop-a and self cannot be resolved.
    assert kinds == [
        ("bad-hardlink", "loop-a"),
        ("bad-hardlink", "self"),
        ("unsafe-path", "../escape"),
    ]
    assert scan.compression == "gzip"
    assert scan.compressed_size == len(blob)
    assert list(tmp_path.iterdir()) == []  # the ELF spool file is gone


def test_gpu_scan_can_be_switched_off(tmp_path: Path, nvcc_library: Path) -> None:
    blob = _tar([("lib/libscale.so", tarfile.REGTYPE, nvcc_library.read_bytes(), "")])
    assert _scan(blob, tmp_path, scan_elf=False).gpu_binaries == ()


def test_not_a_tar_is_a_layer_error(tmp_path: Path) -> None:
    with pytest.raises(LayerError, match="not a valid tar"):
        _scan(b"\x01" * 2048, tmp_path)


def test_truncated_gzip_layer_is_a_layer_error(tmp_path: Path) -> None:
    blob = gzip.compress(_tar([("f", tarfile.REGTYPE, bytes(range(256)) * 400, "")]))[:-50]
    with pytest.raises(LayerError, match="corrupt or truncated"):
        _scan(blob, tmp_path)


def test_path_longer_than_path_max_is_a_problem_not_an_entry(tmp_path: Path) -> None:
    deep = "/".join(["d" * 50] * 100) + "/file"  # 5 KiB name, past Linux PATH_MAX
    scan = _scan(
        _tar([(deep, tarfile.REGTYPE, b"x", ""), ("ok", tarfile.REGTYPE, b"y", "")]), tmp_path
    )
    assert [e.path for e in scan.entries] == ["ok"]
    assert [p.message for p in scan.problems] == ["path longer than 4096 bytes"]


def test_entries_at_the_layer_limit_and_past_it(tmp_path: Path) -> None:
    blob = _tar([(f"f{n}", tarfile.REGTYPE, b"", "") for n in range(5)])
    limits = DEFAULT_LIMITS.override(layer_max_entries=5)
    scan = _scan(blob, tmp_path, limits=limits)
    assert len(scan.entries) == 5
    assert not scan.unchecked
    stopped = _scan(blob, tmp_path, limits=limits.override(layer_max_entries=4))
    assert stopped.entries == ()
    assert stopped.diff_id == ""
    assert "holds more than 4 entries (limit limits.layer-max-entries: 4)" in stopped.unchecked
    assert [p.kind for p in stopped.problems] == [LIMIT_PROBLEM]


def test_unsafe_members_count_toward_the_entry_limit(tmp_path: Path) -> None:
    blob = _tar([(f"../x{n}", tarfile.REGTYPE, b"", "") for n in range(3)])
    scan = _scan(blob, tmp_path, limits=DEFAULT_LIMITS.override(layer_max_entries=2))
    assert "more than 2 entries" in scan.unchecked


def test_image_entry_budget_is_shared_by_its_layers(tmp_path: Path) -> None:
    blob = _tar([(f"f{n}", tarfile.REGTYPE, b"", "") for n in range(3)])
    budget = EntryBudget(5)
    assert not _scan(blob, tmp_path, budget=budget).unchecked  # 3 of 5
    second = _scan(blob, tmp_path, budget=budget)  # 6 > 5
    assert "image: its layers hold more than 5 entries" in second.unchecked
    exact = EntryBudget(6)
    assert not _scan(blob, tmp_path, budget=exact).unchecked
    assert not _scan(blob, tmp_path, budget=exact).unchecked


def test_decompressed_bytes_at_the_limit_and_past_it(tmp_path: Path) -> None:
    tar = _tar([("f", tarfile.REGTYPE, b"x" * 5000, "")])
    blob = gzip.compress(tar)
    at = _scan(blob, tmp_path, limits=DEFAULT_LIMITS.override(layer_max_bytes=len(tar)))
    assert at.uncompressed_size == len(tar)
    assert not at.unchecked
    past = _scan(blob, tmp_path, limits=DEFAULT_LIMITS.override(layer_max_bytes=len(tar) - 1))
    assert "limits.layer-max-bytes" in past.unchecked


def test_a_zero_bomb_stops_at_the_ratio_limit(tmp_path: Path) -> None:
    # 64 MiB of zeros gzip to 64 KiB (ratio ~1000); the scan stops long before the end.
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = bytes(1 << 20)
    blob = b"".join(compressor.compress(chunk) for _ in range(64)) + compressor.flush()
    limits = DEFAULT_LIMITS.override(layer_ratio_after_bytes=4 << 20, layer_max_ratio=100)
    scan = _scan(blob, tmp_path, limits=limits)
    assert "limits.layer-max-ratio" in scan.unchecked
    assert scan.uncompressed_size < 32 << 20


def test_ratio_at_the_limit_passes(tmp_path: Path) -> None:
    # Incompressible data: ratio about 1, far under any ratio limit once past the grace bytes.
    tar = _tar([("f", tarfile.REGTYPE, random.Random(7).randbytes(300_000), "")])
    blob = gzip.compress(tar)
    limits = DEFAULT_LIMITS.override(layer_ratio_after_bytes=1, layer_max_ratio=2)
    assert not _scan(blob, tmp_path, limits=limits).unchecked
    ratio = -(-len(tar) // len(blob))  # the whole layer's ratio, rounded up: still passes
    assert not _scan(blob, tmp_path, limits=limits.override(layer_max_ratio=ratio)).unchecked


def test_pax_header_past_the_limit_leaves_the_layer_unchecked(tmp_path: Path) -> None:
    info = tarfile.TarInfo("f")
    info.pax_headers = {"comment": "z" * 5000}
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        archive.addfile(info, io.BytesIO(b""))
    scan = _scan(
        buffer.getvalue(), tmp_path, limits=DEFAULT_LIMITS.override(tar_header_max_bytes=1024)
    )
    assert "limits.tar-header-max-bytes" in scan.unchecked


def test_deep_directory_trees_do_not_recurse(tmp_path: Path) -> None:
    from gpuship.image.dive import dive_figures
    from gpuship.image.overlay import final_filesystem

    deep = "/".join(["d"] * 1500) + "/file"  # 3 KiB, deeper than Python's recursion limit
    scan = _scan(_tar([(deep, tarfile.REGTYPE, b"abc", "")]), tmp_path)
    assert dive_figures([scan.entries, scan.entries]).wasted_bytes == 6
    assert final_filesystem([scan.entries]).visible_bytes == 3


def test_shared_object_without_gpu_code_is_not_reported(tmp_path: Path) -> None:
    import sys

    # This Python's own ELF binary (position-independent, so ET_DYN like a library).
    library = Path(sys.executable).resolve().read_bytes()
    scan = _scan(_tar([("usr/lib/libpython.so", tarfile.REGTYPE, library, "")]), tmp_path)
    assert scan.gpu_binaries == ()
    assert scan.problems == ()
    assert scan.entries[0].size == len(library)
