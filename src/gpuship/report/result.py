"""Typed command results, and the JSON they become.

A command's `Report.result` is a frozen dataclass its stage defines next to the code that
fills it (`lint/result.py`, `verify/result.py`, ...; the image stage's is `image_result.py`,
below the stages, because build's result embeds it). `to_json` turns it into the `result` of
`--format json`; the command module's `result_type()` names the type,
and `gpuship schema --result COMMAND` derives the JSON Schema users script against from it
(`report/result_schema.py`). The result of `gpuship kb check-require`, for example:

    @dataclass(frozen=True)
    class RequireCheck:
        satisfied: bool
        requirements: tuple[Requirement, ...]   # a JSON list
        host: Host                              # a JSON object
        failure: Failure | None                 # null when satisfied

Conventions, so every result reads alike:
- tuples for JSON lists, `Mapping[str, X]` for objects keyed by data (labels, tags);
- a key that appears only sometimes is `omitted_if_none()`: the JSON leaves it out
  instead of writing null (a key that may be null is a plain `X | None`);
- `flattened()` puts a mapping's entries at the top of the object (matrix axis values,
  which GitHub reads as `matrix.<axis>`);
- a pydantic model read from outside (an audit, a release record) may be a field: it is
  dumped as its own JSON (`model_dump(mode="json", by_alias=True)`);
- no pydantic in the results of `lint` (its start-up budget): the schema is made on demand.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

OMIT_NONE = "gpuship.omit-none"
FLATTEN = "gpuship.flatten"


class JsonModel(Protocol):
    """A pydantic model as a result field or a whole result (the audit document)."""

    def model_dump(self, *, mode: str, by_alias: bool) -> dict[str, Any]: ...


def omitted_if_none() -> Any:
    """A field (default None) whose key the JSON leaves out while it is None."""
    return dataclasses.field(default=None, metadata={OMIT_NONE: True})


def flattened() -> Any:
    """A `Mapping[str, str]` field whose entries stand at the top of the object's JSON."""
    return dataclasses.field(default_factory=dict, metadata={FLATTEN: True})


@dataclasses.dataclass(frozen=True)
class Counts:
    """Findings per severity."""

    error: int
    warning: int
    note: int


@dataclasses.dataclass(frozen=True)
class JsonDocument:
    """A result that is a JSON document of its own (the JSON Schema `gpuship schema` prints),
    shown as it is."""

    value: Mapping[str, Any]


# Exactly these types (not subclasses: a str enum is turned into its value) are JSON as they
# are; most of a large result (a route over 50 x 50) is these, so they are tested first.
_PLAIN = frozenset({str, int, float, bool, type(None)})


def to_json(value: object) -> Any:
    """The JSON value of a result: dataclasses become objects (in field order), enums their
    value, tuples lists; anything else that is not JSON already is a TypeError."""
    if type(value) in _PLAIN:
        return value
    if isinstance(value, enum.Enum):
        return value.value
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, JsonDocument):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _object(value)
    if isinstance(value, (dict, Mapping)):  # dict first: the ABC check is slower
        return {str(key): to_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(item) for item in value]
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json", by_alias=True)
    raise TypeError(f"{type(value).__name__} is not a JSON result value")


def _object(value: DataclassInstance) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, flatten, omit_none in _fields(type(value)):
        item = getattr(value, name)
        if flatten:
            out.update({str(key): to_json(entry) for key, entry in item.items()})
        elif not (item is None and omit_none):
            out[name] = to_json(item)
    return out


@functools.cache
def _fields(cls: type[DataclassInstance]) -> tuple[tuple[str, bool, bool], ...]:
    """(name, flattened, omitted if None) of each field, read once per result class."""
    return tuple(
        (f.name, bool(f.metadata.get(FLATTEN)), bool(f.metadata.get(OMIT_NONE)))
        for f in dataclasses.fields(cls)
    )
