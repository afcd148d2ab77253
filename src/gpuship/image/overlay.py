"""The image's final filesystem, layer by layer, with OCI whiteout semantics.

OCI image-spec `layer.md` "Whiteouts": `.wh.<name>` hides `<name>` of the layers below,
`<dir>/.wh..wh..opq` hides everything the layers below put in `<dir>`; whiteouts never affect
entries of their own layer. A non-directory entry replaces whatever was at its path, subtree
included. Every file hidden this way is recorded, which gives the corrected waste figure:
bytes shipped in some layer that the final image does not show (the copy kept is not waste).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from gpuship.image.layerscan import Entry
from gpuship.image.tarwalk import DIRECTORY, REGULAR

WHITEOUT_PREFIX = ".wh."
OPAQUE_MARKER = ".wh..wh..opq"


@dataclass(frozen=True, slots=True)
class VisibleFile:
    """A path as the running container sees it, and the layer that put it there."""

    path: str
    kind: str
    size: int
    layer: int
    link: str = ""


@dataclass(frozen=True, slots=True)
class ShadowedFile:
    """A file some layer shipped that a later layer deleted or overwrote. Published as
    `image_result.HiddenFile`, its path absolute."""

    path: str
    size: int
    added_in: int
    hidden_in: int
    how: str  # "deleted" | "overwritten"


class _Dir:
    __slots__ = ("children", "entry")

    def __init__(self, entry: VisibleFile | None) -> None:
        self.entry = entry
        self.children: dict[str, _Dir | VisibleFile] = {}


@dataclass(frozen=True)
class FinalFilesystem:
    files: tuple[VisibleFile, ...]
    hidden: tuple[ShadowedFile, ...]

    @property
    def visible_bytes(self) -> int:
        return sum(item.size for item in self.files)

    @property
    def hidden_bytes(self) -> int:
        """Corrected waste: bytes in layers that the final image does not show."""
        return sum(item.size for item in self.hidden)


def _walk(top: _Dir | VisibleFile) -> Iterator[VisibleFile]:
    pending: list[_Dir | VisibleFile] = [top]
    while pending:
        node = pending.pop()
        if isinstance(node, VisibleFile):
            yield node
            continue
        if node.entry is not None:
            yield node.entry
        pending.extend(reversed(list(node.children.values())))


class _Tree:
    def __init__(self) -> None:
        self.root = _Dir(None)
        self.hidden: list[ShadowedFile] = []

    def _parent(self, path: str, layer: int) -> _Dir:
        node = self.root
        parts = path.split("/")[:-1]
        for index, part in enumerate(parts):
            child = node.children.get(part)
            if not isinstance(child, _Dir):
                if isinstance(child, VisibleFile):
                    self._hide(child, layer, "overwritten")
                implied = VisibleFile("/".join(parts[: index + 1]), DIRECTORY, 0, layer)
                child = _Dir(implied)
                node.children[part] = child
            node = child
        return node

    def _hide(self, node: _Dir | VisibleFile, layer: int, how: str) -> None:
        for item in _walk(node):
            if item.kind == REGULAR and item.size > 0:
                self.hidden.append(ShadowedFile(item.path, item.size, item.layer, layer, how))

    def _lookup_dir(self, path: str) -> _Dir | None:
        node: _Dir | VisibleFile = self.root
        for part in path.split("/") if path else []:
            if not isinstance(node, _Dir):
                return None
            found = node.children.get(part)
            if found is None:
                return None
            node = found
        return node if isinstance(node, _Dir) else None

    def whiteout(self, path: str, layer: int) -> None:
        directory, _, name = path.rpartition("/")
        parent = self._lookup_dir(directory)
        if parent is None:
            return
        if name == OPAQUE_MARKER:
            for child in parent.children.values():
                self._hide(child, layer, "deleted")
            parent.children.clear()
            return
        target = name[len(WHITEOUT_PREFIX) :]
        removed = parent.children.pop(target, None)
        if removed is not None:
            self._hide(removed, layer, "deleted")

    def add(self, entry: Entry, layer: int) -> None:
        parent = self._parent(entry.path, layer)
        name = entry.path.rsplit("/", 1)[-1]
        existing = parent.children.get(name)
        item = VisibleFile(entry.path, entry.kind, entry.size, layer, entry.link)
        if entry.kind == DIRECTORY:
            if isinstance(existing, _Dir):
                existing.entry = item  # directories merge; their metadata is the upper one
                return
            if existing is not None:
                self._hide(existing, layer, "overwritten")
            parent.children[name] = _Dir(item)
            return
        if existing is not None:
            self._hide(existing, layer, "overwritten")
        parent.children[name] = item


def is_whiteout(path: str) -> bool:
    return path.rsplit("/", 1)[-1].startswith(WHITEOUT_PREFIX)


def final_filesystem(layers: Sequence[Sequence[Entry]]) -> FinalFilesystem:
    """Apply the layers in order and return what is visible, and what was hidden on the way."""
    tree = _Tree()
    for index, entries in enumerate(layers):
        for entry in entries:
            if is_whiteout(entry.path):
                tree.whiteout(entry.path, index)
        for entry in entries:
            if not is_whiteout(entry.path):
                tree.add(entry, index)
    files = tuple(item for item in _walk(tree.root) if item.path)
    return FinalFilesystem(files=files, hidden=tuple(tree.hidden))
