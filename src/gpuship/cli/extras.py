"""Optional dependency groups (the package's extras) and the commands that need them.

`pip install gpuship` brings what lint, matrix, fleet (of audit files), rules, kb, docs and
schema need. The
registry client, Docker SDK, layer decompressors, ELF reader and NVML come with an extra, so
a pre-commit hook or an editor linting Dockerfiles installs a fraction of the whole. A command
whose extra is missing says which one to install, before it does any work.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys

from gpuship.errors import EnvironmentUnavailable

# Extra -> the modules it makes importable (pyproject's optional-dependencies, by import name;
# tests/unit/core/test_extras.py holds the two together).
EXTRAS: dict[str, tuple[str, ...]] = {
    "image": ("requests", "docker", "isal", "zstandard", "elftools"),
    "verify": ("requests", "docker", "isal", "zstandard", "elftools", "pynvml"),
    "build": ("requests", "docker"),
    "release": ("requests", "docker", "cryptography"),
    "probe": (
        "requests",
        "docker",
        "isal",
        "zstandard",
        "elftools",
        "pynvml",
        "h11",
        "prometheus_client",
    ),
}
COMMAND_EXTRAS: dict[str, str] = {
    "inspect": "image",
    "lock": "build",
    "build": "build",
    "audit": "verify",
    "verify": "verify",
    "promote": "release",
    "rollback": "release",
    "history": "release",
    "prune": "release",
    "route": "image",
    "probe": "probe",
}


def needed(command: str, args: argparse.Namespace) -> str | None:
    """The extra `gpuship COMMAND ARGS` needs, if any (`lint --image` reads images)."""
    if command in ("lint", "fleet") and getattr(args, "image", None):
        return "image"
    return COMMAND_EXTRAS.get(command)


def require(command: str, extra: str) -> None:
    """Raise the one-line install hint when a module of `extra` cannot be imported."""
    missing = [name for name in EXTRAS[extra] if not _importable(name)]
    if missing:
        raise EnvironmentUnavailable(_hint(command, extra, missing))


def explain(command: str, error: ModuleNotFoundError) -> EnvironmentUnavailable | None:
    """The install hint for an import that failed inside a command, if an extra provides it."""
    name = (error.name or "").split(".")[0]
    extra = COMMAND_EXTRAS.get(command)
    if extra is None or name not in EXTRAS[extra]:
        extra = next((e for e, modules in EXTRAS.items() if name in modules), None)
    return None if extra is None else EnvironmentUnavailable(_hint(command, extra, [name]))


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
