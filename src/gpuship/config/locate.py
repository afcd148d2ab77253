"""Where config can come from (the file, `GPUSHIP_*` variables) and the facts about it that
must be known without validating it: the shared top-level keys and the default `fail-on`.

Kept apart from `load` (which validates with pydantic) so a command can learn that nothing
overrides the defaults without paying for the validator: `gpuship lint` on a repository
without `gpuship.yaml` starts in about half the time.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Final

from gpuship.errors import ConfigError

DEFAULT_CONFIG_NAME = "gpuship.yaml"
ENV_PREFIX = "GPUSHIP_"
# `GPUSHIP_LINT__REQUIRE_DIGEST` -> lint.require-digest: `__` separates sections.
ENV_NESTING = "__"
# The top-level keys every command shares (`GpushipConfig`'s, and `limits:`); with the keys of
# the stages' sections they are gpuship.yaml's (a test keeps them equal to the root model's).
SHARED_KEYS = frozenset({"version", "fail-on", "deadline", "rules", "registries", "limits"})
# `GpushipConfig.fail_on` takes its default from here, so runs that validate nothing agree.
DEFAULT_FAIL_ON: Final = "error"
# Seconds a command may wait on registries in all (`deadline`); under the 15 minutes the
# example release jobs get (`timeout-minutes`), so gpuship reports before the runner kills it.
DEFAULT_DEADLINE_S: Final = 600.0


def find_config_file(explicit: str | None, cwd: Path) -> Path | None:
    """The config file to read: `--config PATH` (must exist) or `./gpuship.yaml` if present."""
    if explicit:
        path = Path(explicit)
        if not path.is_absolute():
            path = cwd / path
        if not path.exists():
            raise ConfigError(f"config file {explicit} not found")
        if not path.is_file():  # a FIFO would block the read that follows
            raise ConfigError(f"config file {explicit} is not a regular file")
        return path
    default = cwd / DEFAULT_CONFIG_NAME
    return default if default.is_file() else None


def env_key_path(name: str) -> tuple[str, ...] | None:
    """`GPUSHIP_LINT__REQUIRE_DIGEST` -> ("lint", "require-digest"); None for other variables."""
    if not name.startswith(ENV_PREFIX):
        return None
    parts = name[len(ENV_PREFIX) :].lower().split(ENV_NESTING)
    return tuple(part.replace("_", "-") for part in parts)


def has_config_input(
    path: Path | None, environ: Mapping[str, str], top_level_keys: frozenset[str]
) -> bool:
    """Whether a config file or a `GPUSHIP_*` variable may change any default. A variable
    whose first part is no top-level key is not config: `GPUSHIP_REGISTRY_USER`, the action's
    own `GPUSHIP_PYTHON`."""
    if path is not None:
        return True
    return any((key := env_key_path(name)) and key[0] in top_level_keys for name in environ)
