"""Scan one layer in a single pass: list its entries and read the few contents checks need.

Contents read: the first bytes of every regular file (weights magic numbers, ELF), small text
files that state a CUDA version (`torch/version.py`), and ELF shared objects, which are spooled
to a file in the scan's private temp directory so `pyelftools` can seek to `.nv_fatbin`.
Nothing is ever extracted anywhere else.
"""

from __future__ import annotations

import struct
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from gpuship.errors import LimitExceeded
from gpuship.image import paths, weights
from gpuship.image.blobstream import BlobError, LayerStream, decompress_errors, open_layer
from gpuship.image.fatbin import FATBIN_MAGIC, FatbinError, GpuCode, gpu_code_of_elf
from gpuship.image.tarwalk import HARDLINK, REGULAR, TarFormatError, TarMember, TarWalker
from gpuship.limits import DEFAULT_LIMITS, Limits

_TEXT_LIMIT = 64 * 1024
# Linux PATH_MAX: no engine can create a longer path, so a longer name is hostile.
MAX_PATH_BYTES = 4096
LIMIT_PROBLEM = "limit"
_ELF_MAGIC = b"\x7fELF"
_ELF_SHARED = 3  # e_type ET_DYN
_FATBIN_MAGIC = struct.pack("<I", FATBIN_MAGIC)
_SPOOL_IN_MEMORY = 8 << 20


class LayerError(Exception):
    """A layer cannot be trusted or read; the message names the layer and the reason."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One tar entry of a layer, with its path made relative to the image root."""

    path: str
    kind: str
    size: int
    link: str = ""
    mode: int = 0


@dataclass(frozen=True)
class WeightFile:
    """A file whose content or name says it holds model weights."""

    path: str
    format: str
    size: int


@dataclass(frozen=True)
class GpuBinary:
    """A shared object of the layer with a `.nv_fatbin` section."""

    path: str
    size: int
    code: GpuCode


@dataclass(frozen=True)
class LayerProblem:
    """Something wrong inside a layer that is reported, not fatal (unsafe path, bad link).
    Published as `image_result.Problem`, with the layer's index."""

    kind: str
    path: str
    message: str


@dataclass(frozen=True)
class LayerScan:
    """What one pass over a layer found."""

    index: int
    digest: str
    diff_id: str
    compressed_size: int
    uncompressed_size: int
    compression: str
    entries: tuple[Entry, ...]
    weights: tuple[WeightFile, ...]
    gpu_binaries: tuple[GpuBinary, ...]
    texts: dict[str, str] = field(default_factory=dict)
    problems: tuple[LayerProblem, ...] = ()
    # Why the layer was not read to its end (a limit); its content is then unverified, so it
    # contributes no entries and its diff_id is unknown ("").
    unchecked: str = ""


class EntryBudget:
    """Tar entries left for one image (`image-max-entries`), shared by its layer scans."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._left = limit
        self._lock = threading.Lock()

    def take(self, count: int) -> None:
        """Count `count` more entries; LimitExceeded once the image has more than its limit."""
        with self._lock:
            self._left -= count
            exceeded = self._left < 0
        if exceeded:
            raise LimitExceeded(
                "image",
                f"its layers hold more than {self.limit} entries together",
                Limits.key("image_max_entries"),
                self.limit,
            )


def normalize_member_path(name: str) -> tuple[str | None, str | None]:
    """(image-relative path, problem) for a tar member name.

    `..` components that climb out of the root and absolute names are problems; the path is
    None when it cannot be placed in the image at all.
    """
    problem = None
    if name.startswith("/"):
        problem = "absolute path"
    stripped = name.lstrip("/")
    parts: list[str] = []
    for part in stripped.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                return None, "path escapes the image root with '..'"
            parts.pop()
            problem = problem or "path contains '..'"
            continue
        parts.append(part)
    if not parts:
        return "", problem
    return "/".join(parts), problem


@dataclass
class _Collector:
    index: int
    tmpdir: Path
    scan_elf: bool
    name: str
    max_entries: int
    budget: EntryBudget
    entries: list[Entry] = field(default_factory=list)
    weights: list[WeightFile] = field(default_factory=list)
    gpu: list[GpuBinary] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)
    problems: list[LayerProblem] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    members: int = 0  # every tar member, kept or not (an unsafe path is still work)

    def member(self, walker: TarWalker, member: TarMember) -> None:
        counted = self.members
        self.members += 1
        if counted >= self.max_entries:
            raise LimitExceeded(
                self.name,
                f"holds more than {self.max_entries} entries",
                Limits.key("layer_max_entries"),
                self.max_entries,
            )
        self.budget.take(1)
        if len(member.name.encode("utf-8")) > MAX_PATH_BYTES:
            shown = member.name[:80] + "..."
            self.problems.append(
                LayerProblem("unsafe-path", shown, f"path longer than {MAX_PATH_BYTES} bytes")
            )
            return
        path, problem = normalize_member_path(member.name)
        if problem:
            self.problems.append(LayerProblem("unsafe-path", member.name, problem))
        if not path:
            return
        link = member.linkname
        if member.kind == HARDLINK:
            target, _ = normalize_member_path(link)
            # A hard link must name an earlier member of the same layer; anything else (itself,
            # a later member, a loop) cannot be resolved and is never followed.
            if not target or target == path or target not in self.seen:
                self.problems.append(
                    LayerProblem(
                        "bad-hardlink", path, f"hard link to '{link}' which is not an earlier entry"
                    )
                )
            link = target or link
        self.seen.add(path)
        self.entries.append(Entry(path, member.kind, member.size, link, member.mode))
        if member.kind == REGULAR and member.size > 0:
            self._inspect_content(walker, path, member.size)

    def _inspect_content(self, walker: TarWalker, path: str, size: int) -> None:
        if paths.TORCH_VERSION_FILE.search(path):
            self.texts[path] = walker.read_content(_TEXT_LIMIT).decode("utf-8", "replace")
            return
        head = walker.read_content(weights.HEAD_BYTES)
        fmt = weights.sniff_weights(path, head, size)
        if fmt is not None:
            self.weights.append(WeightFile(path, fmt, size))
            return
        if (
            self.scan_elf
            and head.startswith(_ELF_MAGIC)
            and len(head) > 17
            and head[16] == _ELF_SHARED
            and paths.is_shared_object(path)
        ):
            self._scan_elf(walker, path, size, head)

    def _scan_elf(self, walker: TarWalker, path: str, size: int, head: bytes) -> None:
        # Small libraries stay in memory; big ones go to the scan's private temp directory.
        with tempfile.SpooledTemporaryFile(
            max_size=_SPOOL_IN_MEMORY, mode="w+b", dir=str(self.tmpdir)
        ) as spool:
            spool.write(head)
            seen_magic = _FATBIN_MAGIC in head
            tail = head[-3:]
            buffer = bytearray(1 << 20)
            view = memoryview(buffer)
            while True:
                got = walker.readinto_content(view)
                if not got:
                    break
                chunk = view[:got]
                spool.write(chunk)
                if not seen_magic:
                    # The container magic can straddle two chunks: carry 3 bytes over.
                    seen_magic = _FATBIN_MAGIC in tail + bytes(chunk[:3]) or (
                        buffer.find(_FATBIN_MAGIC, 0, got) >= 0
                    )
                    tail = bytes(chunk[-3:])
            if not seen_magic:
                return  # no fatbin container anywhere: no GPU code, no need to parse the ELF
            spool.seek(0)
            try:
                code = gpu_code_of_elf(spool)
            except FatbinError as error:
                self.problems.append(LayerProblem("bad-fatbin", path, str(error)))
                return
        if code is not None and not code.empty:
            self.gpu.append(GpuBinary(path, size, code))


def scan_layer(
    raw: BinaryIO,
    *,
    index: int,
    digest: str | None,
    size: int | None,
    tmpdir: Path,
    scan_elf: bool = True,
    verify_digest: bool = True,
    limits: Limits = DEFAULT_LIMITS,
    budget: EntryBudget | None = None,
) -> LayerScan:
    """Read one layer blob once; raise LayerError if it is corrupt or not what it claims.

    A layer that passes a limit (decompressed size or ratio, entries) is not read further and
    comes back `unchecked`, with a problem naming the limit. `verify_digest=False` is for
    sources that check the digest themselves (registry client).
    """
    name = f"layer {index} ({digest or 'no digest stated'})"
    collector = _Collector(
        index=index,
        tmpdir=tmpdir,
        scan_elf=scan_elf,
        name=name,
        max_entries=limits.layer_max_entries,
        budget=budget or EntryBudget(limits.image_max_entries),
    )
    errors = decompress_errors()
    try:
        with open_layer(
            raw, digest=digest if verify_digest else None, size=size, name=name, limits=limits
        ) as layer:
            try:
                return _walk(layer, collector, index, digest, limits)
            except LimitExceeded as reached:
                return _unchecked(layer, index, digest, str(reached))
    except BlobError as error:
        raise LayerError(str(error)) from None
    except TarFormatError as error:
        raise LayerError(f"{name}: not a valid tar archive: {error}") from None
    except errors as error:
        raise LayerError(
            f"{name}: compressed data is corrupt or truncated ({type(error).__name__}: {error})"
        ) from None


def _walk(
    layer: LayerStream, collector: _Collector, index: int, digest: str | None, limits: Limits
) -> LayerScan:
    walker = TarWalker(layer.tar, max_metadata_bytes=limits.tar_header_max_bytes)
    for member in walker.members():
        collector.member(walker, member)
    layer.finish()
    return LayerScan(
        index=index,
        digest=digest or layer.uncompressed.digest,
        diff_id=layer.uncompressed.digest,
        compressed_size=layer.verified.bytes_read,
        uncompressed_size=layer.uncompressed.bytes_read,
        compression=layer.compression,
        entries=tuple(collector.entries),
        weights=tuple(collector.weights),
        gpu_binaries=tuple(collector.gpu),
        texts=collector.texts,
        problems=tuple(collector.problems),
    )


def _unchecked(layer: LayerStream, index: int, digest: str | None, why: str) -> LayerScan:
    """The scan of a layer a limit stopped: sizes read so far, no content, the reason."""
    return LayerScan(
        index=index,
        digest=digest or "",
        diff_id="",
        compressed_size=layer.verified.bytes_read,
        uncompressed_size=layer.uncompressed.bytes_read,
        compression=layer.compression,
        entries=(),
        weights=(),
        gpu_binaries=(),
        problems=(LayerProblem(LIMIT_PROBLEM, "", why),),
        unchecked=why,
    )
