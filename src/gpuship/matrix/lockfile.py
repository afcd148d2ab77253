"""`gpuship.lock`: every base image tag of the matrix pinned to the digest it had when locked.

The file is YAML, committed next to `gpuship.yaml`, written in sorted order so a refresh
shows exactly the bases that moved in review::

    # Written by `gpuship lock`; commit it. `gpuship lock --check` fails when it is stale.
    version: 1
    bases:
      ghcr.io/acme/cuda-base:12.4-runtime: sha256:...
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gpuship.documents import load_yaml, read_file
from gpuship.errors import ConfigError, InputError
from gpuship.files import write_atomically
from gpuship.limits import DEFAULT_LIMITS, Limits

LOCK_FILE_NAME = "gpuship.lock"
_HEADER = "# Written by `gpuship lock`; commit it. `gpuship lock --check` fails when it is stale.\n"


class LockFile(BaseModel):
    """The validated content of `gpuship.lock`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal[1] = 1
    bases: dict[str, str] = Field(default_factory=dict)

    @field_validator("bases")
    @classmethod
    def _digests(cls, value: dict[str, str]) -> dict[str, str]:
        for reference, digest in value.items():
            algorithm, _, hex_part = digest.partition(":")
            if algorithm != "sha256" or len(hex_part) != 64:
                raise ValueError(f"{reference}: '{digest}' is not a sha256 digest")
        return value


@dataclass(frozen=True)
class LockChange:
    """One base whose pinned digest differs between the lock file and the registry."""

    reference: str
    locked: str | None
    current: str | None

    def describe(self) -> str:
        if self.locked is None:
            return f"{self.reference} is not locked (now {self.current})"
        if self.current is None:
            return f"{self.reference} is locked but no longer used by any cell"
        return f"{self.reference} moved from {self.locked} to {self.current}"


def read_lock(path: Path, limits: Limits = DEFAULT_LIMITS) -> LockFile | None:
    """The lock file at `path`, or None when it does not exist; ConfigError when invalid."""
    if not path.exists() and not path.is_symlink():
        return None
    try:
        text = read_file(path, "lock file", limits, "yaml_max_bytes").decode("utf-8")
        data = load_yaml(text, str(path), limits) or {}
        return LockFile.model_validate(data)
    except (InputError, UnicodeDecodeError) as exc:  # unreadable, not a file, past a limit
        raise ConfigError(str(exc)) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {str(exc).splitlines()[0]}") from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise ConfigError(f"{path}: {where}: {first['msg']}") from None


def render_lock(bases: Mapping[str, str]) -> str:
    """The lock file text for `bases`, sorted by reference (deterministic)."""
    body = {"version": 1, "bases": dict(sorted(bases.items()))}
    return _HEADER + yaml.safe_dump(body, sort_keys=False, default_flow_style=False, width=1000)


def write_lock(path: Path, bases: Mapping[str, str]) -> None:
    """Write the lock file whole or not at all."""
    write_atomically(path, render_lock(bases), "lock file")


def lock_changes(locked: Mapping[str, str], current: Mapping[str, str]) -> list[LockChange]:
    """Bases added, removed or moved between the lock file and the registry, sorted."""
    return [
        LockChange(reference, locked.get(reference), current.get(reference))
        for reference in sorted(set(locked) | set(current))
        if locked.get(reference) != current.get(reference)
    ]
