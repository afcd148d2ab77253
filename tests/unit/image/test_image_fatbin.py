"""The fatbin parser against real nvcc output and hand-made containers."""

from __future__ import annotations

import io
import struct
from pathlib import Path

import pytest

from gpuship.image.fatbin import FATBIN_MAGIC, FatbinError, gpu_code_of_elf, parse_fatbin


def _readelf_has_fatbin(path: Path) -> bool:
    from elftools.elf.elffile import ELFFile

    with path.open("rb") as handle:
        return ELFFile(handle).get_section_by_name(".nv_fatbin") is not None


def test_nvcc_library_reports_every_gencode_target(nvcc_library: Path) -> None:
    assert _readelf_has_fatbin(nvcc_library)
    with nvcc_library.open("rb") as handle:
        code = gpu_code_of_elf(handle)
    assert code is not None
    # The -gencode list of the fixture: SASS 75/80/90, PTX only for 90.
    assert code.sass == {"sm_75", "sm_80", "sm_90"}
    assert code.ptx == {"compute_90"}


def test_arch_and_family_specific_targets_keep_their_suffix(nvcc_variant_library: Path) -> None:
    with nvcc_variant_library.open("rb") as handle:
        code = gpu_code_of_elf(handle)
    assert code is not None
    assert code.sass == {"sm_90a", "sm_120f"}
    assert code.ptx == {"compute_90a"}


def test_elf_without_gpu_code_has_none() -> None:
    import sys

    with open(sys.executable, "rb") as handle:
        assert gpu_code_of_elf(handle) is None


def test_non_elf_is_an_error() -> None:
    with pytest.raises(FatbinError):
        gpu_code_of_elf(io.BytesIO(b"not an elf file at all" * 10))


def _entry(kind: int, arch: int, payload: bytes, flags: int = 0x11) -> bytes:
    header = bytearray(64)
    struct.pack_into("<HHIQ", header, 0, kind, 0x0101, 64, len(payload))
    struct.pack_into("<I", header, 28, arch)
    struct.pack_into("<Q", header, 40, flags)
    return bytes(header) + payload


def _container(*entries: bytes) -> bytes:
    body = b"".join(entries)
    return struct.pack("<IHHQ", FATBIN_MAGIC, 1, 16, len(body)) + body


def test_hand_made_containers_are_walked_entry_by_entry() -> None:
    data = _container(_entry(2, 86, b"x" * 24), _entry(1, 120, b"ptx\0" * 4)) + _container(
        _entry(0x10, 100, b""), _entry(2, 100, b"", flags=0x1100011)
    )
    code = parse_fatbin(io.BytesIO(data), 0, len(data))
    assert code.sass == {"sm_86", "sm_100", "sm_100a"}
    assert code.ptx == {"compute_120"}


def test_entry_running_past_its_container_is_an_error() -> None:
    broken = bytearray(_container(_entry(2, 80, b"x" * 8)))
    struct.pack_into("<Q", broken, 16 + 8, 10_000)  # payload size beyond the container
    with pytest.raises(FatbinError, match="bad size"):
        parse_fatbin(io.BytesIO(bytes(broken)), 0, len(broken))


def test_bad_magic_is_an_error() -> None:
    data = b"\x01\x02\x03\x04" + bytes(12)
    with pytest.raises(FatbinError, match="magic"):
        parse_fatbin(io.BytesIO(data), 0, len(data))


def test_zero_padding_after_containers_ends_the_walk() -> None:
    data = _container(_entry(2, 90, b"")) + bytes(32)
    assert parse_fatbin(io.BytesIO(data), 0, len(data)).sass == {"sm_90"}
