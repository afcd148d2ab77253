"""The policy the lint rules apply, as a plain value with its defaults.

`LintConfig` (the validated `lint:` section) turns into this; with no config at all the
defaults here are used directly, so linting needs no pydantic (start-up time: see
`config/locate.py`). The defaults live here once; `LintConfig` takes them from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from gpuship.report.catalog import OverrideSource

DEFAULT_MUTABLE_TAGS = (
    "latest",
    "main",
    "master",
    "nightly",
    "edge",
    "dev",
    "devel",
    "stable",
    "rolling",
    "unstable",
    "canary",
)


@dataclass(frozen=True)
class LintSettings:
    """Which rules run, how severe they are, and the thresholds and lists they enforce."""

    enable: tuple[str, ...] = ()
    disable: tuple[str, ...] = ()
    # Rule id, name or category -> "note", "warning", "error" or "off".
    severity: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    trusted_registries: tuple[str, ...] = ()
    require_digest: bool = False
    allowed_toolchains: tuple[str, ...] = ()
    mutable_tags: tuple[str, ...] = DEFAULT_MUTABLE_TAGS
    weights_min_mib: float = 1.0
    large_copy_mib: float = 500.0

    def override_source(self) -> OverrideSource:
        """`enable`, `disable` and `severity` as rule overrides over the Dockerfile rules."""
        # Imported here: every command's config builds LintSettings, few need the catalog.
        from gpuship.lint.rules import RULES

        return OverrideSource("lint", RULES, self.severity, self.enable, self.disable)
