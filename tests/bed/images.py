"""Make test images without pulling anything: layer tarballs from dicts, images FROM scratch.

`layer_tar` turns `{"path/in/image": b"content" | FileSpec(...)}` into a deterministic tar
(sorted entries, mtime 0, parent directories added), so equal inputs give equal digests.
`build_scratch_image` builds an image in the bed engine from such layers with a
`FROM scratch` Dockerfile that `ADD`s each tarball. For images that go straight to a registry,
an OCI layout or a `docker save` archive without an engine, see `bed.oci`.
"""

from __future__ import annotations

import io
import json
import tarfile
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from bed.docker_engine import DockerEngine


@dataclass(frozen=True)
class FileSpec:
    """One tar entry with more than content: mode, owner, or a symlink / directory / hardlink.

    `kind` is "file", "dir", "symlink" or "hardlink"; `target` is the link target for links.
    """

    content: bytes = b""
    mode: int = 0o644
    uid: int = 0
    gid: int = 0
    kind: str = "file"
    target: str = ""


LayerFiles = Mapping[str, bytes | FileSpec]

_TAR_TYPES = {
    "file": tarfile.REGTYPE,
    "dir": tarfile.DIRTYPE,
    "symlink": tarfile.SYMTYPE,
    "hardlink": tarfile.LNKTYPE,
}


def _entry(path: str, spec: FileSpec) -> tarfile.TarInfo:
    if spec.kind not in _TAR_TYPES:
        raise ValueError(f"{path}: unknown kind {spec.kind!r}; expected one of {list(_TAR_TYPES)}")
    info = tarfile.TarInfo(path)
    info.type = _TAR_TYPES[spec.kind]
    info.mode = spec.mode
    info.uid, info.gid = spec.uid, spec.gid
    info.mtime = 0
    info.linkname = spec.target
    info.size = len(spec.content) if spec.kind == "file" else 0
    return info


def layer_tar(files: LayerFiles) -> bytes:
    """An uncompressed layer tarball holding `files` (paths relative to /, parents implied)."""
    specs: dict[str, FileSpec] = {}
    for raw_path, value in files.items():
        path = str(PurePosixPath("/", raw_path).relative_to("/"))
        if path == ".":
            raise ValueError(f"{raw_path!r} is not a file path")
        specs[path] = value if isinstance(value, FileSpec) else FileSpec(content=value)
        for parent in PurePosixPath(path).parents:
            if str(parent) != ".":
                specs.setdefault(str(parent), FileSpec(mode=0o755, kind="dir"))
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(specs):
            spec = specs[path]
            info = _entry(path, spec)
            tar.addfile(info, io.BytesIO(spec.content) if spec.kind == "file" else None)
    return buffer.getvalue()


def _quoted(word: str) -> str:
    return json.dumps(word, ensure_ascii=False)


def dockerfile_for_layers(
    layer_count: int,
    env: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    extra_lines: Sequence[str] = (),
) -> str:
    """A `FROM scratch` Dockerfile that ADDs layer0.tar.. in order, then sets ENV and LABELs."""
    lines = ["FROM scratch"]
    lines += [f"ADD layer{index}.tar /" for index in range(layer_count)]
    # json.dumps gives a double-quoted word with backslash escapes, which Dockerfile reads back.
    lines += [f"ENV {key}={_quoted(value)}" for key, value in (env or {}).items()]
    lines += [f"LABEL {_quoted(key)}={_quoted(value)}" for key, value in (labels or {}).items()]
    lines += list(extra_lines)
    return "\n".join(lines) + "\n"


def build_scratch_image(
    engine: DockerEngine,
    tag: str,
    layers: Sequence[LayerFiles],
    env: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    extra_lines: Sequence[str] = (),
) -> Any:
    """Build `tag` in the bed engine from scratch, one image layer per entry of `layers`.

    `extra_lines` are appended to the Dockerfile verbatim (e.g. `USER 1000`, `CMD ["x"]`).
    Returns the docker-py `Image`.
    """
    with tempfile.TemporaryDirectory(prefix="gsbed-ctx-") as context:
        context_dir = Path(context)
        for index, files in enumerate(layers):
            (context_dir / f"layer{index}.tar").write_bytes(layer_tar(files))
        (context_dir / "Dockerfile").write_text(
            dockerfile_for_layers(len(layers), env, labels, extra_lines)
        )
        image, _log = engine.client.images.build(path=context, tag=tag, rm=True, pull=False)
    return image
