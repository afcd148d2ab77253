"""Every stage of gpuship, declared once: its commands, its rules, its config section, its extra.

The lists the CLI needs are derived from `STAGES`: the commands `gpuship --help` lists and the
modules that define them (`registry`), the extra each command needs (`extras`), the rule
catalog (`rules_catalog`), the root config model and the top-level keys of gpuship.yaml
(`config_catalog`), the sections whose keys switch rules (`Context.rule_overrides`), and so
the pages `gpuship docs` generates from those. pyproject's import-linter contracts cannot be
derived; tests/unit/cli/test_stage_list.py checks them, and every derived list, against it.
A new stage is one entry here plus its package in the layers contract (the test says so).

Plain data: modules and types are named by string (`gpuship.lint.config:LintConfig`) and
imported only by the command that needs them, so `gpuship lint` starts without any other
stage's rules, pydantic models or dependencies. The records are NamedTuples, immutable like
frozen dataclasses but made without compiling methods at import, and the annotations are
evaluated (no `from __future__ import annotations`, which makes NamedTuple compile each one):
either cost made `gpuship lint` on one file run 0.5-2% more instructions (callgrind).
"""

from typing import NamedTuple


class CommandSpec(NamedTuple):
    """A command a stage provides, defined by `gpuship/cli/commands/<name>.py`."""

    name: str
    extra: str | None = None  # the extra it needs; None: the base install is enough
    image_extra: bool = False  # with `--image REF` it reads images: the 'image' extra then


class Extra(NamedTuple):
    """An optional dependency group of the package (pyproject's optional-dependencies) and
    the modules it makes importable (tests/unit/core/test_extras.py holds the two together)."""

    name: str
    modules: tuple[str, ...]


class RuleHeading(NamedTuple):
    """Where `gpuship rules` and docs/rules/ list a stage's rules (`gpuship.<stage>.rules`'s
    `RULES`); stages that share a heading are listed under it together, in stage order."""

    name: str  # `gpuship rules --stage NAME`; the `stage` of each rule in its JSON
    title: str


class SectionSpec(NamedTuple):
    """The top-level key of gpuship.yaml a stage owns, and the model (`module:Class`, a
    `config.section.Section`) its value is validated as."""

    key: str
    model: str
    many: bool = False  # a list of models (`images:`)
    # Its `enable`, `disable` and `severity` switch the stage's rules (`lint:`), as `rules:`
    # does for every stage's.
    switches_rules: bool = False


class StageSpec(NamedTuple):
    """One stage: the package `gpuship.<name>` and what the CLI needs to know of it."""

    name: str
    commands: tuple[CommandSpec, ...]
    rules: RuleHeading
    config: SectionSpec | None = None
    extra: Extra | None = None  # the extra it defines (its commands may need another's)
    reference: bool = False  # a reference tool, listed after the stages from PR to release

    @property
    def rules_module(self) -> str:
        """The module holding the stage's `RULES`."""
        return f"gpuship.{self.name}.rules"


_IMAGE_MODULES = ("requests", "docker", "isal", "zstandard", "elftools")
_REGISTRY_MODULES = ("requests", "docker")
_BUILD_RULES = RuleHeading("build", "Matrix, lock and build (`gpuship matrix|lock|build`)")

# From pull request to release, then the reference tools: the order of `gpuship --help`, of
# `gpuship rules` and of docs/rules/.
STAGES: tuple[StageSpec, ...] = (
    StageSpec(
        "lint",
        (CommandSpec("lint", image_extra=True),),
        RuleHeading("lint", "Dockerfile lint (`gpuship lint`)"),
        SectionSpec("lint", "gpuship.lint.config:LintConfig", switches_rules=True),
    ),
    StageSpec(
        "image",
        (CommandSpec("inspect", "image"),),
        RuleHeading("image", "Image inspection (`gpuship inspect`, `lint --image`)"),
        # Named after the command: `image:` beside `images:` would hide a typo in either.
        SectionSpec("inspect", "gpuship.image.config:ImageStageConfig"),
        Extra("image", _IMAGE_MODULES),
    ),
    StageSpec(
        "matrix",
        (CommandSpec("matrix"), CommandSpec("lock", "build")),
        _BUILD_RULES,
        SectionSpec("images", "gpuship.matrix.config:ImageConfig", many=True),
    ),
    StageSpec(
        "builder",
        (CommandSpec("build", "build"),),
        _BUILD_RULES,
        extra=Extra("build", _REGISTRY_MODULES),
    ),
    StageSpec(
        "verify",
        (
            CommandSpec("audit", "verify"),
            CommandSpec("verify", "verify"),
            CommandSpec("fleet", image_extra=True),
        ),
        RuleHeading("verify", "GPU host verification (`gpuship verify|fleet`)"),
        # verify, fleet and route share it: it lives in compat, below them all.
        SectionSpec("verify", "gpuship.compat.config:VerifyConfig"),
        Extra("verify", (*_IMAGE_MODULES, "pynvml")),
    ),
    StageSpec(
        "route",
        (CommandSpec("route", "image"),),
        RuleHeading("route", "Routing before the queue (`gpuship route`)"),
        SectionSpec("route", "gpuship.route.config:RouteConfig"),
    ),
    StageSpec(
        "probe",
        (CommandSpec("probe", "probe"),),
        RuleHeading("probe", "Load and memory probe (`gpuship probe`)"),
        SectionSpec("probe", "gpuship.probe.config:ProbeConfig"),
        Extra("probe", (*_IMAGE_MODULES, "pynvml", "h11", "prometheus_client")),
    ),
    StageSpec(
        "release",
        tuple(CommandSpec(name, "release") for name in ("promote", "rollback", "history", "prune")),
        RuleHeading("release", "Release (`gpuship promote|rollback|prune`)"),
        SectionSpec("release", "gpuship.release.config:ReleaseConfig"),
        Extra("release", (*_REGISTRY_MODULES, "cryptography")),
    ),
    StageSpec(
        "kb",
        (CommandSpec("kb"),),
        RuleHeading("kb", "CUDA knowledge base (`gpuship kb`)"),
        reference=True,
    ),
    StageSpec(
        "docs",
        (CommandSpec("docs"),),
        RuleHeading("docs", "Generated reference pages (`gpuship docs --check`)"),
        reference=True,
    ),
)

# The CLI's own commands, views over every stage: `rules` lists each one's rules (first of the
# reference tools), `schema` each one's config section and result type (last).
CATALOG_COMMANDS = ("rules", "schema")


def command_names() -> tuple[str, ...]:
    """Every command, in the order `gpuship --help` lists them."""
    pipeline = [c.name for stage in STAGES if not stage.reference for c in stage.commands]
    reference = [c.name for stage in STAGES if stage.reference for c in stage.commands]
    first, last = CATALOG_COMMANDS
    return (*pipeline, first, *reference, last)


def commands() -> dict[str, CommandSpec]:
    """Each stage's commands by name."""
    return {command.name: command for stage in STAGES for command in stage.commands}


def extras() -> dict[str, tuple[str, ...]]:
    """Extra -> the modules it makes importable."""
    return {stage.extra.name: stage.extra.modules for stage in STAGES if stage.extra}


def rule_headings() -> tuple[RuleHeading, ...]:
    """The headings rules are listed under, in stage order."""
    return tuple(dict.fromkeys(stage.rules for stage in STAGES))


def section_keys() -> frozenset[str]:
    """The top-level keys of gpuship.yaml the stages own."""
    return frozenset(stage.config.key for stage in STAGES if stage.config)


def rule_switches() -> dict[str, StageSpec]:
    """The sections whose keys switch their stage's rules, by key: the stage."""
    return {
        stage.config.key: stage
        for stage in STAGES
        if stage.config is not None and stage.config.switches_rules
    }
