"""Read local files and parse JSON, YAML and TOML documents within `gpuship.limits`.

Every reader of a document a user or an image supplies goes through here, so no document can
exhaust the recursion limit (deep nesting), memory (alias bombs, dense arrays, huge files) or
time (a FIFO that never ends), and each failure is one `InputError` naming the input.

JSON items are counted on the raw bytes before decoding (C-speed `bytes.count`), so a dense
document never becomes millions of objects. YAML is checked on PyYAML's event stream
(iterative) before composing, counting every alias as the nodes its anchor stands for, and a
key given twice in one mapping is an error naming both lines (PyYAML keeps the last silently;
YAML 1.2 §3.2.1.1 says keys are unique).
"""

from __future__ import annotations

import functools
import json
import os
import stat
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, BinaryIO

from gpuship.errors import InputError, LimitExceeded
from gpuship.limits import Limits
from gpuship.redaction import shown

if TYPE_CHECKING:
    import yaml


def open_regular(path: Path, what: str) -> BinaryIO:
    """Open a regular file for reading; InputError for anything else.

    FIFOs, sockets and devices are refused before a read can block or never end: the file is
    opened non-blocking (opening a FIFO does not wait for a writer) and checked with fstat,
    so a path swapped for a FIFO after any earlier check cannot hang either.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as error:
        raise InputError(f"{path}: cannot read {what}: {error.strerror or error}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise InputError(f"{path}: {what} is not a regular file ({_kind(mode)})")
    return os.fdopen(fd, "rb")


def read_file(path: Path, what: str, limits: Limits, size_limit: str) -> bytes:
    """The bytes of a regular file no larger than the limit named `size_limit`."""
    max_bytes: int = getattr(limits, size_limit)
    with open_regular(path, what) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > max_bytes:
            raise LimitExceeded(
                str(path), f"{what} has {size} bytes", Limits.key(size_limit), max_bytes
            )
        data = _read_up_to(handle, max_bytes + 1)
    if len(data) > max_bytes:  # grew while being read
        raise LimitExceeded(
            str(path), f"{what} is larger than {max_bytes} bytes", Limits.key(size_limit), max_bytes
        )
    return data


def _read_up_to(handle: BinaryIO, size: int) -> bytes:
    parts: list[bytes] = []
    while size > 0:
        chunk = handle.read(min(size, 1 << 20))
        if not chunk:
            break
        parts.append(chunk)
        size -= len(chunk)
    return b"".join(parts)


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a plain file"


def load_json(data: bytes | str, where: str, limits: Limits) -> Any:
    """Decode a JSON document whose size the caller has bounded; InputError naming `where`.

    Items are counted on the raw text (commas and opening brackets, strings included) before
    decoding, which bounds the objects a dense document can make; nesting is caught by the
    decoder's own recursion guard when very deep, and measured after decoding otherwise.
    """
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    items = raw.count(b",") + raw.count(b"[") + raw.count(b"{")
    if items > limits.json_max_items:
        raise LimitExceeded(
            where,
            f"JSON holds {items} commas and brackets",
            Limits.key("json_max_items"),
            limits.json_max_items,
        )
    try:
        value = json.loads(raw)
    except RecursionError:
        value, deep = None, True
    except ValueError as error:  # JSONDecodeError, bad UTF-8, a number of 5,000+ digits
        raise InputError(f"{where}: not JSON: {_first_line(error)}") from None
    else:
        deep = _nests_deeper(value, limits.json_max_depth)
    if deep:
        raise LimitExceeded(
            where,
            f"JSON nests deeper than {limits.json_max_depth} levels",
            Limits.key("json_max_depth"),
            limits.json_max_depth,
        )
    return value


def _nests_deeper(value: Any, max_depth: int) -> bool:
    todo: list[tuple[Any, int]] = [(value, 0)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, dict):
            item = item.values()
        elif not isinstance(item, list):
            continue
        if depth + 1 > max_depth:
            return True
        todo.extend((child, depth + 1) for child in item)
    return False


def read_json(path: Path, what: str, limits: Limits, size_limit: str = "json_max_bytes") -> Any:
    """Read and decode a local JSON file no larger than the limit named `size_limit`."""
    return load_json(read_file(path, what, limits, size_limit), f"{path}: {what}", limits)


def load_toml(text: str, where: str) -> dict[str, Any]:
    """Decode a TOML document whose size the caller has bounded; InputError naming `where`.

    The reader is the standard library's `tomllib` (3.11+), on 3.10 `tomli`, the package
    tomllib was taken from (the same parser, a dependency there only): a runner whose
    `python3` is 3.10 (Ubuntu 22.04) reads the same files.
    """
    toml = _toml_reader()
    try:
        document: dict[str, Any] = toml.loads(text)
    except RecursionError:  # arrays or inline tables nested thousands deep
        raise InputError(f"{where}: TOML nests too deep to read") from None
    except toml.TOMLDecodeError as error:
        raise InputError(f"{where}: not TOML: {_first_line(error)}") from None
    return document


def _toml_reader() -> ModuleType:
    if sys.version_info >= (3, 11):
        import tomllib

        return tomllib
    import tomli

    return tomli


def _first_line(error: BaseException) -> str:
    text = str(error).splitlines()
    return text[0][:200] if text else type(error).__name__


def compose_yaml(text: str, where: str, limits: Limits) -> yaml.Node | None:
    """The YAML node tree of `text`, after checking its depth and alias-expanded size.

    Raises `yaml.YAMLError` for invalid YAML (callers report it with its position) and
    LimitExceeded when a bound is passed.
    """
    if len(text) > limits.yaml_max_bytes:
        raise LimitExceeded(
            where,
            f"YAML has {len(text)} characters",
            Limits.key("yaml_max_bytes"),
            limits.yaml_max_bytes,
        )
    _check_yaml_events(text, where, limits)
    loader = _yaml_loader()(text)
    try:
        node: yaml.Node | None = loader.get_single_node()
    finally:
        loader.dispose()
    return node


def construct_yaml(node: yaml.Node | None, where: str = "YAML") -> Any:
    """Python values for a node tree from `compose_yaml` (safe types only); InputError
    `where:LINE:COLUMN: duplicate key ...` for a key given twice in one mapping."""
    if node is None:
        return None
    loader = _unique_key_loader()("")
    try:
        return loader.construct_document(node)
    except _DuplicateKey as duplicate:
        raise InputError(f"{where}:{duplicate}") from None
    finally:
        loader.dispose()


def load_yaml(text: str, where: str, limits: Limits) -> Any:
    """`yaml.safe_load` within the limits, refusing duplicate keys."""
    return construct_yaml(compose_yaml(text, where, limits), where)


def _yaml_loader() -> Any:
    # Imported here: lint reads local JSON through this module on every run, YAML rarely,
    # and PyYAML costs start-up (the C loader when PyYAML was built with libyaml).
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _DuplicateKey(Exception):
    """`LINE:COLUMN: duplicate key 'k' (first at line N)`, for `construct_yaml` to place."""


@functools.cache
def _unique_key_loader() -> Any:
    """The safe loader whose mappings refuse a key given twice, at any depth."""

    base = _yaml_loader()

    class UniqueKeyLoader(base):  # type: ignore[misc, valid-type]
        def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> Any:
            seen: dict[Any, yaml.Node] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue  # `<<:` merges keys that the mapping's own may override
                key = self.construct_object(key_node, deep=True)
                try:
                    first = seen.setdefault(key, key_node)
                except TypeError:
                    continue  # unhashable: the base constructor says so with its position
                if first is not key_node:
                    mark = key_node.start_mark
                    raise _DuplicateKey(
                        f"{mark.line + 1}:{mark.column + 1}: duplicate key "
                        f"{shown(str(key_node.value))} (first at line "
                        f"{first.start_mark.line + 1})"
                    )
            return super().construct_mapping(node, deep)

    return UniqueKeyLoader


def _check_yaml_events(text: str, where: str, limits: Limits) -> None:
    import yaml

    open_at: list[tuple[str | None, int]] = []  # (anchor, nodes counted before it)
    anchored: dict[str, int] = {}  # anchor -> nodes it stands for
    nodes = 0
    for event in yaml.parse(text, Loader=_yaml_loader()):
        if isinstance(event, yaml.AliasEvent):
            if any(anchor == event.anchor for anchor, _ in open_at):
                # An alias inside its own anchor: a structure that contains itself, which
                # every walk over it (positions, validation) would follow for ever.
                raise InputError(
                    f"{where}:{_line(event)}: YAML alias *{event.anchor} refers to a "
                    "mapping or sequence that contains it (a recursive structure)"
                )
            nodes += anchored.get(event.anchor or "", 1)
        elif isinstance(event, yaml.ScalarEvent):
            nodes += 1
            if event.anchor:
                anchored[event.anchor] = 1
        elif isinstance(event, yaml.CollectionStartEvent):
            nodes += 1
            open_at.append((event.anchor, nodes))
            if len(open_at) > limits.yaml_max_depth:
                raise LimitExceeded(
                    f"{where}:{_line(event)}",
                    f"YAML nests deeper than {limits.yaml_max_depth} levels",
                    Limits.key("yaml_max_depth"),
                    limits.yaml_max_depth,
                )
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, before = open_at.pop()
            if anchor:
                anchored[anchor] = nodes - before + 1
        if nodes > limits.yaml_max_nodes:
            raise LimitExceeded(
                f"{where}:{_line(event)}",
                f"YAML stands for more than {limits.yaml_max_nodes} nodes once its aliases "
                "are expanded",
                Limits.key("yaml_max_nodes"),
                limits.yaml_max_nodes,
            )


def _line(event: yaml.Event) -> int:
    mark = event.start_mark
    return mark.line + 1 if mark is not None else 0
