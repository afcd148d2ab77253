"""Image efficiency figures computed exactly as dive computes them, so users can compare.

dive (wagoodman/dive, `dive/filetree/efficiency.go`, `file_tree.go`, `file_node.go`,
`dive/image/analysis.go`, `dive/image/docker/image_archive.go`; reference lint-anchors.md §2.1)
builds one file tree per layer and visits every *leaf* of each, in sorted depth-first order:

- a normal leaf adds its tar header size to its path;
- a whiteout leaf (`.wh.name`) looks the path up in the layers below (stacked the way dive
  stacks them) and adds the size of that whole subtree when it was a directory, otherwise 0;
  a whiteout whose target dive cannot find aborts the visit of the rest of that layer, and the
  path's record keeps its initial minimum of -1 (dive's behaviour, reproduced on purpose);
- opaque markers (`.wh..wh..opq`) never enter the tree.

Per path it sums `CumulativeSize` and keeps the smallest size seen; a path seen in two or more
layers is an "inefficiency". Efficiency = sum(min) / sum(cumulative) (1.0 when the sum is 0),
wasted bytes = sum(cumulative) over inefficiencies (every copy, including the one kept: dive
#684), user size = sum of layer sizes except layer 0 (a layer's size is the sum of its tar
header sizes), user-wasted percent = wasted / user size.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from gpuship.image.layerscan import Entry
from gpuship.image.tarwalk import DIRECTORY

_WHITEOUT = ".wh."
_OPAQUE_PREFIX = ".wh..wh.."


@dataclass(frozen=True)
class _Info:
    size: int = 0
    is_dir: bool = False


_EMPTY = _Info()


class _Node:
    __slots__ = ("children", "info", "name", "parent")

    def __init__(self, name: str, parent: _Node | None, info: _Info = _EMPTY) -> None:
        self.name = name
        self.parent = parent
        self.info = info
        self.children: dict[str, _Node] = {}

    def is_whiteout(self) -> bool:
        return self.name.startswith(_WHITEOUT)

    def copy(self) -> _Node:
        """A deep copy of this (root) node's tree; iterative, so depth is never a problem."""
        clone = _Node(self.name, None, self.info)
        pending = [(self, clone)]
        while pending:
            original, copied = pending.pop()
            for name, child in original.children.items():
                child_copy = _Node(name, copied, child.info)
                copied.children[name] = child_copy
                pending.append((child, child_copy))
        return clone

    def child_first(self) -> Iterator[_Node]:
        """Depth-first, children in sorted order, a node after its children (root excluded)."""
        stack: list[tuple[_Node, Iterator[str]]] = [(self, iter(sorted(self.children)))]
        while stack:
            node, names = stack[-1]
            name = next(names, None)
            if name is not None:
                child = node.children[name]
                stack.append((child, iter(sorted(child.children))))
                continue
            stack.pop()
            if node.parent is not None:
                yield node

    def subtree_size(self) -> int:
        return sum(node.info.size for node in self.child_first())


def _get_node(root: _Node, path: str) -> _Node | None:
    node = root
    for name in path.strip("/").split("/"):
        if not name:
            continue
        child = node.children.get(name)
        if child is None:
            return None
        node = child
    return node


def _stack(lower: _Node, upper: _Node) -> None:
    """dive's `FileTree.Stack`: every upper node, children first in sorted order, is added to
    `lower` (AddPath: payload set after its children) or, for a whiteout, its target removed
    (RemovePath). Walking both trees together gives the same result without path lookups."""
    stack = [(upper, lower, iter(sorted(upper.children)))]
    while stack:
        up, low, names = stack[-1]
        name = next(names, None)
        if name is None:
            stack.pop()
            if up.parent is not None:
                low.info = up.info
            continue
        child = up.children[name]
        if child.is_whiteout():
            low.children.pop(name[len(_WHITEOUT) :], None)
            continue
        counterpart = low.children.get(name)
        if counterpart is None:
            counterpart = _Node(name, low)
            low.children[name] = counterpart
        stack.append((child, counterpart, iter(sorted(child.children))))


def _leaves(tree: _Node) -> Iterator[tuple[_Node, str]]:
    """Leaves in dive's visiting order (sorted, depth-first), with dive's path for each:
    `/a/b`, the `.wh.` prefix dropped from a whiteout leaf's own name."""
    stack = [(tree, "", iter(sorted(tree.children)))]
    while stack:
        node, path, names = stack[-1]
        name = next(names, None)
        if name is not None:
            child = node.children[name]
            stack.append((child, f"{path}/{name}", iter(sorted(child.children))))
            continue
        stack.pop()
        if node.parent is not None and not node.children:
            if node.is_whiteout():
                path = f"{path.rsplit('/', 1)[0]}/{node.name[len(_WHITEOUT) :]}"
            yield node, path


def build_layer_tree(entries: Sequence[Entry]) -> _Node:
    """One layer's tree as dive builds it from the tar headers (AddPath per entry).

    Parent directories are looked up by path prefix: nodes are never removed while a layer's
    tree is built, so the cache stays valid and each entry costs one dict lookup.
    """
    root = _Node("", None)
    parents: dict[str, _Node] = {"": root}
    for entry in entries:
        directory, _, name = entry.path.rpartition("/")
        parent = parents.get(directory)
        if parent is None:
            parent = _directory(root, directory, parents)
            if parent is None:
                continue  # an opaque marker in the middle of the path: dive adds nothing
        node = parent.children.get(name)
        if node is None:
            if name.startswith(_OPAQUE_PREFIX):
                continue
            node = _Node(name, parent)
            parent.children[name] = node
        node.info = _Info(entry.size, entry.kind == DIRECTORY)
    return root


def _directory(root: _Node, path: str, parents: dict[str, _Node]) -> _Node | None:
    """The node for `path`, created (payload-less, as dive's AddPath does) where missing."""
    node = root
    prefix = ""
    for name in path.split("/"):
        prefix = f"{prefix}/{name}" if prefix else name
        cached = parents.get(prefix)
        if cached is not None:
            node = cached
            continue
        child = node.children.get(name)
        if child is None:
            if name.startswith(_OPAQUE_PREFIX):
                return None
            child = _Node(name, node)
            node.children[name] = child
        parents[prefix] = child
        node = child
    return node


@dataclass(frozen=True)
class Inefficiency:
    """A path dive saw in two or more layers, with all its copies' bytes."""

    path: str
    count: int
    cumulative_size: int


@dataclass(frozen=True)
class DiveFigures:
    """dive's numbers for an image, with the same meaning and the same quirks."""

    efficiency: float
    wasted_bytes: int
    size_bytes: int
    user_size_bytes: int
    user_wasted_percent: float | None  # None where dive would divide by zero
    layer_sizes: tuple[int, ...]
    inefficiencies: tuple[Inefficiency, ...]  # largest first


@dataclass
class _PathData:
    cumulative: int = 0
    minimum: int = -1
    count: int = 0


def dive_figures(layers: Sequence[Sequence[Entry]]) -> DiveFigures:
    """Compute dive's efficiency, wasted bytes and user-wasted percent for these layers."""
    trees = [build_layer_tree(entries) for entries in layers]
    layer_sizes = tuple(sum(entry.size for entry in entries) for entries in layers)
    data: dict[str, _PathData] = {}
    inefficient: list[str] = []
    stacked = trees[0].copy() if trees else _Node("", None)
    for tree in trees:
        for node, path in _leaves(tree):
            record = data.setdefault(path, _PathData())
            if node.is_whiteout():
                previous = _get_node(stacked, path)
                if previous is None:
                    break  # dive: GetNode error ends this layer's visit
                size = previous.subtree_size() if previous.info.is_dir else 0
            else:
                size = node.info.size
            record.cumulative += size
            if record.minimum < 0 or size < record.minimum:
                record.minimum = size
            record.count += 1
            if record.count == 2:
                inefficient.append(path)
        # dive stacks trees[0..i] onto a copy of trees[0] for the next layer's lookups.
        _stack(stacked, tree)
    minimum_total = sum(record.minimum for record in data.values())
    cumulative_total = sum(record.cumulative for record in data.values())
    efficiency = 1.0 if cumulative_total == 0 else minimum_total / cumulative_total
    wasted = sum(data[path].cumulative for path in inefficient)
    user_size = sum(layer_sizes[1:])
    matches = sorted(
        (Inefficiency(path, data[path].count, data[path].cumulative) for path in inefficient),
        key=lambda item: (-item.cumulative_size, item.path),
    )
    return DiveFigures(
        efficiency=efficiency,
        wasted_bytes=wasted,
        size_bytes=sum(layer_sizes),
        user_size_bytes=user_size,
        user_wasted_percent=(wasted / user_size) if user_size else None,
        layer_sizes=layer_sizes,
        inefficiencies=tuple(matches),
    )
