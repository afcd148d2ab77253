"""Base class for every `gpuship.yaml` section, and how a stage declares the key it owns.

Sections are strict (an unknown key is an error, never silently ignored), frozen, and spelled
in kebab-case in YAML (`min-memory-gib`) while Python uses snake_case (`min_memory_gib`).
Stage modules define their own section by subclassing `Section` in their `config.py`;
`gpuship.cli.config_catalog` names the top-level key that holds each (a `StageSection`) and
gathers them into the root model. This module imports nothing from gpuship so any section can
import it without cycles.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Generic, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict

# A severity a config may give a rule; "off" turns the rule off. YAML 1.1 reads a bare `off`
# as false, so false means "off" too: `GSL103: off` works without quotes.
SeverityName = Annotated[
    Literal["note", "warning", "error", "off"],
    BeforeValidator(lambda value: "off" if value is False else value),
]


def to_kebab(name: str) -> str:
    """`min_memory_gib` -> `min-memory-gib`."""
    return name.replace("_", "-")


class Section(BaseModel):
    """A strict, immutable config section with kebab-case keys."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        alias_generator=to_kebab,
        populate_by_name=True,
    )


SectionT = TypeVar("SectionT")


@dataclass(frozen=True)
class StageSection(Generic[SectionT]):
    """A top-level key of `gpuship.yaml` that a stage owns: `verify:` holds a `VerifyConfig`.

    `model` is the type of the key's value (a `Section`, or a list of them: `list[ImageConfig]`);
    it is also how callers ask for the section: `config.section(VerifyConfig)`. The key is
    optional in the file; `default` makes its value when it is absent (None: `model()`).
    """

    key: str
    model: type[SectionT]
    default: Callable[[], SectionT] | None = None
