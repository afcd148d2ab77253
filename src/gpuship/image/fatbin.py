"""GPU code compiled into an ELF shared object: SASS and PTX targets of its `.nv_fatbin`.

ELF parsing is `pyelftools`; the section is walked as the fatbin container format (NVIDIA's
`fatbinary.h`, as documented by reverse-engineering write-ups such as nvopen-tools
`fatbin/FORMAT_SPECIFICATION.md`): a 16-byte header (magic 0xBA55ED50, version 1, header size,
size of the entries) followed by entries, each with a kind (1 = PTX, 2 and 0x10 = ELF cubin,
i.e. SASS), its header size, its payload size and the SM number at byte 28. Only entry headers
are read, never payloads, so a gigabyte-sized fatbin costs a few kilobytes of reads.

Arch-specific (`sm_90a`) and family-specific (`sm_120f`) targets are marked by bits of the
entry's 64-bit flags at byte 40: 0x100000 and 0x200000, as nvcc 13.0 writes them
(tests/unit/image builds such libraries and checks the names read back).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import IO

FATBIN_MAGIC = 0xBA55ED50
_CONTAINER = struct.Struct("<IHHQ")
_ENTRY = struct.Struct("<HHIQ")  # kind, version, header size, payload size
_ENTRY_ARCH_OFFSET = 28
_ENTRY_FLAGS_OFFSET = 40
_FLAG_ARCH_SPECIFIC = 0x100000
_FLAG_FAMILY_SPECIFIC = 0x200000
_ENTRY_HEAD = 48
_KIND_PTX = 0x01
_KINDS_SASS = (0x02, 0x10)
# A container holding more entries than this is corrupt; real libraries hold a few dozen.
_MAX_ENTRIES_PER_CONTAINER = 100_000
_MAX_CONTAINERS = 1_000_000


class FatbinError(Exception):
    """The `.nv_fatbin` section is malformed."""


@dataclass(frozen=True)
class GpuCode:
    """Targets found in one binary: `sm_XX` with SASS, `compute_XX` with PTX."""

    sass: frozenset[str]
    ptx: frozenset[str]

    @property
    def empty(self) -> bool:
        return not self.sass and not self.ptx


def _variant(flags: int) -> str:
    if flags & _FLAG_ARCH_SPECIFIC:
        return "a"
    if flags & _FLAG_FAMILY_SPECIFIC:
        return "f"
    return ""


def parse_fatbin(stream: IO[bytes], start: int, length: int) -> GpuCode:
    """Walk the fatbin containers in `stream[start : start + length]`."""
    sass: set[str] = set()
    ptx: set[str] = set()
    end = start + length
    position = start
    containers = 0
    while position + _CONTAINER.size <= end:
        stream.seek(position)
        raw = stream.read(_CONTAINER.size)
        magic, version, header_size, fat_size = _CONTAINER.unpack(raw)
        if magic == 0 and header_size == 0:
            break  # zero padding after the last container
        if magic != FATBIN_MAGIC:
            raise FatbinError(f"bad fatbin magic {magic:#x} at offset {position}")
        if version != 1 or header_size < _CONTAINER.size:
            raise FatbinError(f"unsupported fatbin header at offset {position}")
        container_end = position + header_size + fat_size
        if container_end > end:
            raise FatbinError(f"fatbin container at offset {position} runs past its section")
        containers += 1
        if containers > _MAX_CONTAINERS:
            raise FatbinError("too many fatbin containers")
        entry = position + header_size
        entries = 0
        while entry + _ENTRY_HEAD <= container_end:
            stream.seek(entry)
            head = stream.read(_ENTRY_HEAD)
            kind, _, entry_header, payload = _ENTRY.unpack_from(head)
            if entry_header < _ENTRY_HEAD or entry + entry_header + payload > container_end:
                raise FatbinError(f"fatbin entry at offset {entry} has a bad size")
            (arch,) = struct.unpack_from("<I", head, _ENTRY_ARCH_OFFSET)
            (flags,) = struct.unpack_from("<Q", head, _ENTRY_FLAGS_OFFSET)
            suffix = _variant(flags)
            if kind == _KIND_PTX:
                ptx.add(f"compute_{arch}{suffix}")
            elif kind in _KINDS_SASS:
                sass.add(f"sm_{arch}{suffix}")
            entries += 1
            if entries > _MAX_ENTRIES_PER_CONTAINER:
                raise FatbinError(f"too many entries in fatbin container at offset {position}")
            entry += entry_header + payload
        position = container_end
    return GpuCode(sass=frozenset(sass), ptx=frozenset(ptx))


def gpu_code_of_elf(stream: IO[bytes]) -> GpuCode | None:
    """GPU code in an ELF file, or None when it has no `.nv_fatbin` section.

    Raises FatbinError for a malformed ELF or fatbin.
    """
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        elf = ELFFile(stream)
        section = elf.get_section_by_name(".nv_fatbin")
        if section is None or section["sh_type"] == "SHT_NOBITS":
            return None
        offset = int(section["sh_offset"])
        size = int(section["sh_size"])
    except ELFError as error:
        raise FatbinError(f"unreadable ELF: {error}") from None
    except Exception as error:
        # pyelftools lets many types escape on hostile headers (OverflowError, struct.error,
        # IndexError... found by fuzzing); all mean the same: not an ELF it can read.
        raise FatbinError(f"unreadable ELF: {type(error).__name__}: {error}") from None
    length = stream.seek(0, 2)
    if offset + size > length:  # a header may claim any 64-bit offset; seek() takes less
        raise FatbinError(f"fatbin section ({size} bytes at {offset}) lies past the file's end")
    try:
        return parse_fatbin(stream, offset, size)
    except struct.error:
        raise FatbinError("fatbin section is truncated") from None
