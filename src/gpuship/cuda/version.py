"""Dotted numeric versions (CUDA "12.4.1", driver "535.104.05") compared component-wise."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from gpuship.cuda.errors import InvalidVersion

# At most 18 digits a component (an int64), 16 components: no real version comes near, and a
# 100,000-digit "version" is refused by the pattern instead of costing an int() of it.
_VERSION = re.compile(r"[0-9]{1,18}(?:\.[0-9]{1,18}){0,15}")


def _significant(parts: tuple[int, ...]) -> tuple[int, ...]:
    """Parts without trailing zeros, so 12.4 == 12.4.0 (as nvidia-container-cli compares)."""
    end = len(parts)
    while end > 1 and parts[end - 1] == 0:
        end -= 1
    return parts[:end]


@functools.total_ordering
@dataclass(frozen=True, eq=False)
class Version:
    """A dotted numeric version; `text` keeps the original spelling ("535.104.05")."""

    parts: tuple[int, ...]
    text: str = field(default="", compare=False)

    @classmethod
    def parse(cls, text: str, what: str = "version") -> Version:
        """Parse dotted numbers (`[0-9]+(.[0-9]+)*`, bounded); anything else raises
        InvalidVersion."""
        stripped = text.strip()
        if not _VERSION.fullmatch(stripped):
            raise InvalidVersion(text, what)
        return cls(tuple(int(p) for p in stripped.split(".")), stripped)

    @property
    def major(self) -> int:
        return self.parts[0]

    @property
    def minor(self) -> int:
        return self.parts[1] if len(self.parts) > 1 else 0

    @property
    def patch(self) -> int:
        return self.parts[2] if len(self.parts) > 2 else 0

    def major_minor(self) -> Version:
        """`12.4.1` -> `12.4`."""
        return Version((self.major, self.minor), f"{self.major}.{self.minor}")

    def __str__(self) -> str:
        return self.text or ".".join(str(p) for p in self.parts)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return _significant(self.parts) == _significant(other.parts)

    def __lt__(self, other: Version) -> bool:
        return _significant(self.parts) < _significant(other.parts)

    def __hash__(self) -> int:
        return hash(_significant(self.parts))


def as_version(value: str | Version, what: str = "version") -> Version:
    """Accept a Version or its text."""
    return value if isinstance(value, Version) else Version.parse(value, what)


def cuda_version_from_nvml(value: int) -> Version:
    """Decode `nvmlSystemGetCudaDriverVersion()` (12040 -> 12.4), as libnvidia-container does."""
    major, minor = value // 1000, value % 100 // 10
    return Version((major, minor), f"{major}.{minor}")
