"""Run every rule over one Dockerfile, then apply pragmas and the `lint:` config.

Pragmas (comment lines):
- `# gpuship ignore=GSL105,pip-cache-left -- reason`: the next instruction only.
- `# gpuship stage ignore=...`: the stage whose FROM follows immediately.
- `# gpuship global ignore=...`: the whole file.
- `# hadolint ignore=DL3008` (also `global`/`stage`): the same, for our rules that map to
  those DL codes, so files written for hadolint keep working.
A key may be a rule id, a rule name, a category, or a hadolint DL code.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gpuship.dockerfile.source import ParsedDockerfile, Span, read_dockerfile
from gpuship.errors import InputError
from gpuship.limits import DEFAULT_LIMITS, Limits
from gpuship.lint.analysis import Analysis
from gpuship.lint.checks import (
    cache,
    cuda,
    driverlibs,
    layers,
    meta,
    pinning,
    security,
    toolchain,
    unchecked,
    weights,
)
from gpuship.lint.checks.base import Hit
from gpuship.lint.context import BuildContext, guess_context
from gpuship.lint.result import FileSummary, StageSummary
from gpuship.lint.rules import RULES
from gpuship.lint.settings import LintSettings
from gpuship.lint.stages import Build, TargetNotFound, TooManyStages, build_targets
from gpuship.report import Finding, Location, Severity
from gpuship.report.catalog import Overrides, resolve, resolve_overrides, rules_by_id

# Run for each target. `unchecked` (what a limit left unread) runs once, after them all:
# the context files they read, and refuse, are known only then.
CHECKS: tuple[Callable[[Analysis], Iterator[Hit]], ...] = (
    meta.check,
    pinning.check,
    weights.check,
    cache.check,
    toolchain.check,
    cuda.check,
    driverlibs.check,
    layers.check,
    security.check,
)
_LIMIT_FIX = (
    "Split the Dockerfile or build the targets one at a time (`--target`); if it is genuine, "
    "raise the limit named in the message."
)
_PRAGMA = re.compile(
    r"^(?P<tool>gpuship|hadolint)\s+(?:(?P<scope>global|stage)\s+)?ignore\s*=\s*"
    r"(?P<keys>[A-Za-z0-9_\-]+(?:\s*,\s*[A-Za-z0-9_\-]+)*)\s*(?:(?:--|#)\s*(?P<reason>.*))?$"
)


@dataclass(frozen=True)
class Pragmas:
    """Rule ids silenced for the file, per stage (by FROM index) and per instruction."""

    file: frozenset[str] = frozenset()
    stages: Mapping[int, frozenset[str]] = field(default_factory=dict)
    instructions: Mapping[int, frozenset[str]] = field(default_factory=dict)


def parse_pragmas(parsed: ParsedDockerfile) -> Pragmas:
    """Read ignore pragmas from the comments, bound to the instruction that follows each."""
    starts = [(i.start_line, i) for i in parsed.instructions]
    whole: set[str] = set()
    stages: dict[int, set[str]] = {}
    instructions: dict[int, set[str]] = {}
    for comment in parsed.comments:
        match = _PRAGMA.match(comment.text)
        if not match:
            continue
        ids = _ids(match.group("keys"))
        scope = match.group("scope")
        if scope == "global":
            whole.update(ids)
            continue
        following = next((i for line, i in starts if line > comment.line), None)
        if following is None:
            continue
        if scope == "stage":
            if following.keyword == "FROM":
                stages.setdefault(following.index, set()).update(ids)
        else:
            instructions.setdefault(following.index, set()).update(ids)
    return Pragmas(
        frozenset(whole),
        {k: frozenset(v) for k, v in stages.items()},
        {k: frozenset(v) for k, v in instructions.items()},
    )


def _ids(keys: str) -> set[str]:
    ids: set[str] = set()
    for key in keys.split(","):
        ids.update(rule.id for rule in resolve(RULES, key))
    return ids


def suppressed(hit: Hit, pragmas: Pragmas) -> bool:
    """True when a pragma silences this hit."""
    if hit.rule in pragmas.file:
        return True
    if hit.stage is not None and hit.rule in pragmas.stages.get(
        hit.stage.from_instruction.index, frozenset()
    ):
        return True
    return hit.instruction is not None and hit.rule in pragmas.instructions.get(
        hit.instruction.index, frozenset()
    )


def rule_policy(config: LintSettings) -> dict[str, Severity | None]:
    """The overrides the `lint:` section alone sets (rule id -> severity, None: off), for
    linting without the CLI; the CLI passes `rules_catalog.rule_overrides`, which adds the
    top-level `rules:` section."""
    return resolve_overrides((config.override_source(),))


@dataclass(frozen=True)
class FileResult:
    """What linting one Dockerfile produced."""

    findings: tuple[Finding, ...]
    suppressed: int
    summary: FileSummary


def lint_file(
    path: Path,
    *,
    display: str,
    context_dir: Path | None,
    build_args: Mapping[str, str],
    target: str | None,
    config: LintSettings,
    policy: Overrides,
    platform: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> FileResult:
    """Lint one Dockerfile. Unparseable content is a GSL001 finding, never an exception.

    Without `target`, every target the file defines is linted (see `build_targets`) and the
    findings merged. `context_dir` None: the context is guessed from where the COPY sources
    are. `platform` ("linux/arm64") sets TARGETARCH & co. (default: this machine's).
    `policy` holds the rule severities gpuship.yaml sets (`rule_overrides`): a rule it turns
    off is not reported, and a pragma naming it silences nothing. Findings keep the severity
    their check gave; the configured ones are set with every command's, at the CLI boundary
    (`report.catalog.apply_overrides`).
    """
    try:
        parsed = read_dockerfile(path)
    except OSError as exc:
        raise InputError(f"{display}: cannot read ({exc.strerror or exc})") from None
    hits: list[Hit] = [
        Hit(
            "GSL001",
            problem.message,
            Span(problem.line, problem.column, problem.line, problem.column),
            None,
            None,
        )
        for problem in parsed.problems
    ]
    context_text = str(context_dir or path.parent)
    builds: tuple[Build, ...] = ()
    if parsed.instructions and not hits:
        try:
            builds = build_targets(parsed, build_args, target, platform, limits)
        except TargetNotFound as exc:
            raise InputError(f"{display}: {exc}") from None
        except TooManyStages as exc:
            first = exc.first_past
            hits.append(Hit("GSL003", str(exc), first.span, first, None, fix=_LIMIT_FIX))
    if builds:
        if context_dir is None:
            context_dir = guess_context(path, _literal_sources(parsed))
        context_text = str(context_dir)
        context = BuildContext(context_dir, path, limits)
        hits.extend(_check_targets(Analysis(display, parsed, builds[0], context, config), builds))
    pragmas = parse_pragmas(parsed)
    findings: list[Finding] = []
    silenced = 0
    seen: set[tuple[str, str, int, int]] = set()
    catalog = rules_by_id(RULES)
    for hit in hits:
        if hit.rule in policy and policy[hit.rule] is None:
            continue
        if suppressed(hit, pragmas):
            silenced += 1
            continue
        file = display if hit.file is None else _relative(hit.file)
        key = (hit.rule, file, hit.span.line, hit.span.column)
        if key in seen:
            continue
        seen.add(key)
        rule = catalog[hit.rule]
        findings.append(
            Finding(
                rule=hit.rule,
                # A hit may lower/raise its own severity (e.g. a note for the harmless
                # direction); a configured one wins over it, at the CLI boundary.
                severity=hit.severity or rule.severity,
                message=hit.message,
                location=Location(
                    file, hit.span.line, hit.span.column, hit.span.end_line, hit.span.end_column
                ),
                fix=hit.fix or rule.fix,
            )
        )
    findings.sort(
        key=lambda f: (
            f.location.file if f.location else "",
            f.location.line or 0 if f.location else 0,
            f.location.column or 0 if f.location else 0,
            f.rule,
        )
    )
    stages = _stage_summary(builds) if builds else ()
    targets = tuple(builds[0].stages[b.target].name or str(b.target) for b in builds if b.stages)
    summary = FileSummary(display, context_text, stages, targets, len(findings), silenced)
    return FileResult(tuple(findings), silenced, summary)


def _check_targets(first: Analysis, builds: tuple[Build, ...]) -> Iterator[Hit]:
    """Every check for each target; checks about the file as a whole (not one target's
    build) run for the first target only (`Analysis.first_target`), and what a limit left
    unchecked is reported once all have run."""
    analysis = first
    for build in builds:
        analysis = analysis.for_target(build)
        for check in CHECKS:
            yield from check(analysis)
    if first.build.targets_left:
        yield _targets_left(first)
    yield from unchecked.check(first)


def _targets_left(analysis: Analysis) -> Hit:
    """GSL003 on the first target that `targets-max-instructions` left out, naming them all."""
    left = [analysis.stages[i] for i in analysis.build.targets_left]
    names = [s.name or str(s.index) for s in left]
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    message = (
        f"{len(left)} targets are not checked ({shown}): checking them too would read more "
        f"than {analysis.context.limits.targets_max_instructions} instructions, counting a "
        f"stage once for each target that builds it (limit "
        f"{Limits.key('targets_max_instructions')})"
    )
    first = left[0].from_instruction
    return Hit("GSL003", message, first.span, first, None, fix=_LIMIT_FIX)


def _stage_summary(builds: tuple[Build, ...]) -> tuple[StageSummary, ...]:
    """Each stage, whether it is in a linted target's image and whether any target builds it."""
    final = {i for b in builds for i in b.final_chain}
    built = {i for b in builds for i in b.reachable}
    return tuple(
        StageSummary(
            index=s.index,
            name=s.name,
            base=s.base,
            in_final_image=s.index in final,
            built=s.index in built,
        )
        for s in builds[0].stages
    )


def _literal_sources(parsed: ParsedDockerfile) -> list[str]:
    """COPY/ADD sources from the context that hold no variables (to locate the context)."""
    sources = []
    for instruction in parsed.instructions:
        if instruction.keyword not in ("COPY", "ADD") or instruction.heredocs:
            continue
        if instruction.flag("from") is not None:
            continue
        for source in instruction.args[:-1]:
            if "$" not in source and "://" not in source and source not in (".", "./"):
                sources.append(source)
    return sources


def _relative(path: Path) -> str:
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return str(path)
    return str(path) if relative.startswith("..") else relative
