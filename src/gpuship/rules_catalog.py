"""Every stage's rules in one list: for `gpuship rules` and the generated rule pages.

Each stage keeps its own catalog next to its checks; this module only gathers them, so a rule
id (GSL lint, GSI image, GSB build, GSV verify, GSQ route, GSP probe, GSR release) is
documented wherever it is used.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from gpuship.report import Rule


@dataclass(frozen=True)
class Stage:
    """A stage whose rules appear in findings, and where its catalog lives."""

    name: str
    title: str
    modules: tuple[str, ...]


STAGES = (
    Stage("lint", "Dockerfile lint (`gpuship lint`)", ("gpuship.lint.catalog",)),
    Stage(
        "image", "Image inspection (`gpuship inspect`, `lint --image`)", ("gpuship.image.rules",)
    ),
    Stage(
        "build",
        "Matrix, lock and build (`gpuship matrix|lock|build`)",
        ("gpuship.matrix.rules", "gpuship.builder.rules"),
    ),
    Stage("verify", "GPU host verification (`gpuship verify|fleet`)", ("gpuship.verify.rules",)),
    Stage("route", "Routing before the queue (`gpuship route`)", ("gpuship.route.rules",)),
    Stage("probe", "Load and memory probe (`gpuship probe`)", ("gpuship.probe.rules",)),
    Stage("release", "Release (`gpuship promote|rollback|prune`)", ("gpuship.release.rules",)),
)


@dataclass(frozen=True)
class CatalogEntry:
    """A rule and the stage that reports it."""

    stage: Stage
    rule: Rule


def all_rules() -> list[CatalogEntry]:
    """Every rule of every stage, in catalog order."""
    entries: list[CatalogEntry] = []
    for stage in STAGES:
        for module in stage.modules:
            catalog: Mapping[str, Rule] | Iterable[Rule] = importlib.import_module(module).RULES
            rules = catalog.values() if isinstance(catalog, Mapping) else catalog
            entries.extend(CatalogEntry(stage, rule) for rule in rules)
    return entries
