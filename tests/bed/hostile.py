"""Hostile inputs, made fast and small on disk: bombs, floods, deep nesting, bad file kinds.

Each builder writes into a directory the test owns and returns the path (or CLI argument) to
hand to gpuship. Bombs are built by repeating one compressed chunk (gzip members and zstd
frames concatenate), so 20 GiB of zeros costs a fraction of a second and about 20 MB.
"""

from __future__ import annotations

import json
import os
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path

import zstandard

from bed.oci import (
    OCI_CONFIG,
    OCI_LAYER_GZIP,
    OCI_MANIFEST,
    Blob,
    Image,
    Platform,
    canonical_json,
    make_image,
    write_oci_layout,
)

GIB = 1 << 30
OCI_LAYER_ZSTD = "application/vnd.oci.image.layer.v1.tar+zstd"
_CHUNK = 64 << 20  # zeros compressed once, then repeated


def zero_bomb(gib: int, compression: str) -> bytes:
    """A layer blob that decompresses to `gib` GiB of zeros (gzip members or zstd frames)."""
    zeros = bytes(_CHUNK)
    if compression == "gzip":
        compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
        member = compressor.compress(zeros) + compressor.flush()
    else:
        member = zstandard.ZstdCompressor(level=3).compress(zeros)
    return member * (gib * GIB // _CHUNK)


def _header(name: bytes) -> bytes:
    """A ustar header for an empty regular file (checksum filled in)."""
    fields = (
        name.ljust(100, b"\0")
        + b"0000644\0"  # mode
        + b"0000000\0" * 2  # uid, gid
        + b"00000000000\0" * 2  # size, mtime
    )
    tail = b"0" + bytes(100) + b"ustar\x0000" + bytes(247)  # typeflag, linkname, magic+rest
    checksum = sum(fields) + sum(tail) + 8 * 32
    return fields + b"%06o\0 " % checksum + tail


def many_files_tar_gzip(count: int) -> tuple[bytes, str]:
    """(gzip blob, diff_id) of a layer of `count` distinct empty files, written in batches."""
    import hashlib

    raw = hashlib.sha256()
    compressor = zlib.compressobj(1, zlib.DEFLATED, 31)
    parts: list[bytes] = []
    batch = 10_000
    for start in range(0, count, batch):
        headers = b"".join(
            _header(b"d%04d/f%08d" % (n // batch, n))
            for n in range(start, min(count, start + batch))
        )
        raw.update(headers)
        parts.append(compressor.compress(headers))
    end = bytes(1024)
    raw.update(end)
    parts.append(compressor.compress(end) + compressor.flush())
    return b"".join(parts), "sha256:" + raw.hexdigest()


def raw_layer_layout(
    directory: Path,
    blob: bytes,
    *,
    diff_id: str,
    media_type: str = OCI_LAYER_GZIP,
    config_media_type: str = OCI_CONFIG,
) -> Path:
    """An OCI layout of one image whose single layer is `blob`, as given."""
    layer = Blob(media_type, blob)
    config_doc = {
        **Platform().as_dict(),
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created_by": "hostile layer"}],
    }
    config = Blob(config_media_type, canonical_json(config_doc))
    manifest = Blob(
        OCI_MANIFEST,
        canonical_json(
            {
                "schemaVersion": 2,
                "mediaType": OCI_MANIFEST,
                "config": config.descriptor(),
                "layers": [layer.descriptor()],
            }
        ),
    )
    image = Image(manifest, config, (layer,), (b"",), Platform())
    return write_oci_layout(directory, image)


def plain_layout(directory: Path, files: Mapping[str, bytes] | None = None) -> tuple[Path, Image]:
    """A small valid OCI layout (one layer), for cases that break one part of it."""
    image = make_image([dict(files or {"app/run.py": b"print(1)\n"})])
    return write_oci_layout(directory, image), image


def blob_path(layout: Path, digest: str) -> Path:
    return layout / "blobs" / "sha256" / digest.removeprefix("sha256:")


def nested_json(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def deep_json_layout(directory: Path, part: str, depth: int = 100_000) -> Path:
    """A layout whose `part` ("index", "manifest" or "config") nests `depth` levels deep."""
    layout, image = plain_layout(directory)
    deep = b'{"schemaVersion": 2, "x": ' + nested_json(depth) + b"}"
    if part == "index":
        (layout / "index.json").write_bytes(deep)
        return layout
    target = image.manifest if part == "manifest" else image.config
    # The digest check comes after parsing would: keep the name, replace the bytes, and make
    # the descriptor chain name the new digest so only the nesting is wrong.
    new = Blob(target.media_type, deep)
    blob_path(layout, new.digest).write_bytes(deep)
    if part == "manifest":
        index = {"schemaVersion": 2, "manifests": [new.descriptor()]}
        (layout / "index.json").write_bytes(canonical_json(index))
        return layout
    manifest = json.loads(image.manifest.data)
    manifest["config"] = new.descriptor()
    new_manifest = Blob(OCI_MANIFEST, canonical_json(manifest))
    blob_path(layout, new_manifest.digest).write_bytes(new_manifest.data)
    index = {"schemaVersion": 2, "manifests": [new_manifest.descriptor()]}
    (layout / "index.json").write_bytes(canonical_json(index))
    return layout


def layer_blob_replaced(directory: Path, kind: str) -> Path:
    """A layout whose layer blob is a FIFO, a symlink out of the layout, or a directory."""
    layout, image = plain_layout(directory)
    path = blob_path(layout, image.layers[0].digest)
    path.unlink()
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink-out":
        outside = directory.parent / f"{directory.name}-outside"
        outside.write_bytes(image.layers[0].data)
        path.symlink_to(outside)
    elif kind == "device":
        path.symlink_to("/dev/zero")
    else:
        path.mkdir()
    return layout


def deep_yaml(depth: int) -> str:
    """Block-style nesting (libyaml bounds flow nesting itself; block nesting is ours)."""
    return "".join(f"{'  ' * level}k{level}:\n" for level in range(depth)) + "  " * depth + "x\n"


def alias_bomb(rungs: int = 10, width: int = 9) -> str:
    """The billion-laughs ladder: each anchor repeats the previous `width` times."""
    lines = [f"a0: &a0 [{', '.join(['lol'] * width)}]"]
    lines += [f"a{n}: &a{n} [{', '.join([f'*a{n - 1}'] * width)}]" for n in range(1, rungs)]
    return "\n".join(lines) + "\n"


def doubling_dockerfile(lines: int = 40) -> str:
    """ARG values that double on each line: 2**lines bytes if expanded naively."""
    body = ["FROM python:3.12-slim", "ARG A=xxxxxxxxxxxxxxxx"]
    body += ["ARG A=$A$A"] * lines
    body += ["ENV B=$A$A", "RUN echo $B"]
    return "\n".join(body) + "\n"


def backtracking_globs() -> Sequence[str]:
    """`.dockerignore` lines that take a backtracking regex engine exponential time."""
    return ["*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", "**/*a*a*a*a*a*a*a*a*a*a*a*a*c"]


def deep_docker_archive(path: Path, depth: int = 100_000) -> Path:
    """A `docker save` tar whose manifest.json nests `depth` levels deep."""
    import io
    import tarfile

    with tarfile.open(path, mode="w") as archive:
        data = nested_json(depth)
        info = tarfile.TarInfo("manifest.json")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return path


def huge_file(path: Path, size: int, line: bytes) -> Path:
    """`path` filled with `line` repeated up to `size` bytes, written in 1 MiB pieces."""
    chunk = line * (max(1, (1 << 20) // len(line)))
    with path.open("wb") as handle:
        written = 0
        while written < size:
            piece = chunk[: size - written]
            handle.write(piece)
            written += len(piece)
    return path


def wide_matrix_config(values_per_axis: int = 10, axes: int = 6) -> str:
    """`images:` whose axes multiply to values_per_axis ** axes cells."""
    lines = ["images:", "  - name: wide", "    repository: 127.0.0.1:5000/acme/wide", "    axes:"]
    for axis in range(axes):
        lines.append(f"      a{axis}: [{', '.join(f'v{n}' for n in range(values_per_axis))}]")
    return "\n".join(lines) + "\n"
