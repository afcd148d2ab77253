"""Base class for every `gpuship.yaml` section.

Sections are strict (an unknown key is an error, never silently ignored), frozen, and spelled
in kebab-case in YAML (`min-memory-gib`) while Python uses snake_case (`min_memory_gib`).
Stage modules define their own section by subclassing `Section`; this module imports nothing
from gpuship so any section can import it without cycles.
"""

from __future__ import annotations

from typing import Annotated, Literal

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
