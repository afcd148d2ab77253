"""Base class for every `gpuship.yaml` section.

Sections are strict (an unknown key is an error, never silently ignored), frozen, and spelled
in kebab-case in YAML (`min-memory-gib`) while Python uses snake_case (`min_memory_gib`).
Stage modules define their own section by subclassing `Section`; this module imports nothing
from gpuship so any section can import it without cycles.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


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
