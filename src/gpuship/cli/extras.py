"""Optional dependency groups (the package's extras) and the commands that need them.

`pip install gpuship` brings what lint, matrix, fleet (of audit files), rules, kb, docs and
schema need. The registry client, Docker SDK, layer decompressors, ELF reader and NVML come
with an extra, so a pre-commit hook or an editor linting Dockerfiles installs a fraction of the
whole. Each stage declares its extra and the extra each of its commands needs (`cli/stages.py`).
A command whose extra is missing says which one to install, before it does any work.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys

from gpuship.cli import stages
from gpuship.errors import EnvironmentUnavailable

# Extra -> the modules it makes importable; command -> the extra it needs (`cli/stages.py`).
EXTRAS: dict[str, tuple[str, ...]] = stages.extras()
_COMMANDS = stages.commands()


def needed(command: str, args: argparse.Namespace) -> str | None:
    """The extra `gpuship COMMAND ARGS` needs, if any (`lint --image` reads images)."""
    spec = _COMMANDS.get(command)
    if spec is not None and spec.image_extra and getattr(args, "image", None):
        return "image"
    return _extra_of(command)


def require(command: str, extra: str) -> None:
    """Raise the one-line install hint when a module of `extra` cannot be imported."""
    missing = [name for name in EXTRAS[extra] if not _importable(name)]
    if missing:
        raise EnvironmentUnavailable(_hint(command, extra, missing))


def explain(command: str, error: ModuleNotFoundError) -> EnvironmentUnavailable | None:
    """The install hint for an import that failed inside a command, if an extra provides it."""
    name = (error.name or "").split(".")[0]
    extra = _extra_of(command)
    if extra is None or name not in EXTRAS[extra]:
        extra = next((e for e, modules in EXTRAS.items() if name in modules), None)
    return None if extra is None else EnvironmentUnavailable(_hint(command, extra, [name]))


def _extra_of(command: str) -> str | None:
    spec = _COMMANDS.get(command)
    return spec.extra if spec is not None else None  # the CLI's own commands need none


def _importable(name: str) -> bool:
    if name in sys.modules:
        return sys.modules[name] is not None  # None: an import known to fail
    return importlib.util.find_spec(name) is not None


def _hint(command: str, extra: str, missing: list[str]) -> str:
    return (
        f"`gpuship {command}` needs the '{extra}' extra (missing: {', '.join(missing)}); "
        f"install it with: pip install 'gpuship[{extra}]' (pipx: pipx install --force "
        f"'gpuship[{extra}]')"
    )
