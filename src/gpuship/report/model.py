"""The one result type every stage returns, and the values inside it.

A stage builds a `Report`; renderers in this package turn it into text, JSON, GitHub
annotations, a job summary, SARIF or step outputs. Nothing else prints findings.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gpuship.errors import EXIT_FAILED, EXIT_OK

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

    from gpuship.report.result import JsonModel


class Severity(str, enum.Enum):
    """How serious a finding is; ordered note < warning < error."""

    NOTE = "note"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Severity.NOTE: 0, Severity.WARNING: 1, Severity.ERROR: 2}

# Categories are a fixed set so users can filter and configure by them.
CATEGORIES = (
    "pinning",
    "weights",
    "cache",
    "toolchain",
    "cuda",
    "layer-order",
    "waste",
    "security",
    "size",
    "metadata",
    "runtime",
    "release",
    "performance",
)


@dataclass(frozen=True)
class Rule:
    """What a rule checks: its catalog entry, shown in SARIF `tool.driver.rules` and docs."""

    id: str
    name: str
    category: str
    severity: Severity
    summary: str
    rationale: str = ""
    fix: str = ""
    bad_example: str = ""
    good_example: str = ""
    # What the rule cannot judge (where gpuship's knowledge stops) and so leaves unreported.
    limits: str = ""
    # SARIF `security-severity` (0.0-10.0); GitHub shows it for security-relevant rules only.
    security_severity: float | None = None
    hadolint: tuple[str, ...] = ()
    # False for a rule that reports what happened (a refused push, a failed write) rather
    # than a judgement: no `rules:` override in gpuship.yaml can make it less than it is.
    configurable: bool = True

    @property
    def help_uri(self) -> str:
        return f"{DOCS_BASE}/rules/{self.id}.md"


_LINE_REFERENCE = re.compile(r"\bline \d+")

DOCS_BASE = "https://github.com/gpuship/gpuship/blob/main/docs"


@dataclass(frozen=True)
class Location:
    """Where a finding is: a file (relative or absolute) and a 1-based region, when known."""

    file: str
    line: int | None = None
    column: int | None = None
    end_line: int | None = None
    end_column: int | None = None


@dataclass(frozen=True)
class Finding:
    """One problem found by a stage."""

    rule: str
    severity: Severity
    message: str
    location: Location | None = None
    help_uri: str | None = None
    fix: str | None = None
    fingerprint: str | None = None

    def stable_fingerprint(self) -> str:
        """A fingerprint that survives edits that only move lines: rule, file and message,
        with line numbers quoted in the message ("after COPY . (line 10)") left out."""
        if self.fingerprint:
            return self.fingerprint
        import hashlib  # only SARIF and JSON ask; every command imports this module (start-up)

        file = self.location.file if self.location else ""
        message = _LINE_REFERENCE.sub("line", self.message)
        digest = hashlib.sha256(f"{self.rule}\0{file}\0{message}".encode()).hexdigest()
        return digest[:32]


@dataclass(frozen=True)
class Table:
    """A stage's tabular result (matrix cells, GPUs, layers), laid out by each renderer."""

    title: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class Series:
    """One line of a chart: a name (shown in the legend under the chart) and a y per x."""

    name: str
    values: tuple[float, ...]


@dataclass(frozen=True)
class Chart:
    """A line chart over categories (load steps, seconds), drawn where the renderer can."""

    title: str
    x_label: str
    x_values: tuple[str, ...]
    y_label: str
    series: tuple[Series, ...]


@dataclass
class Report:
    """Everything a stage produced: findings, its result as data, and what to show."""

    command: str
    findings: list[Finding] = field(default_factory=list)
    # The command's typed result (a frozen dataclass of its stage: the matrix, the digest,
    # the verdict, the release record...), the `result` of --format json; see report/result.py.
    result: DataclassInstance | JsonModel | None = None
    # Catalog entries for rules that may appear in `findings` (for SARIF and help links):
    # `rules_by_id(RULES)` of the stage's catalog (gpuship.report.catalog).
    rules: Mapping[str, Rule] = field(default_factory=dict)
    tables: list[Table] = field(default_factory=list)
    # Charts: drawn in the job summary (Mermaid), left out of the terminal view.
    charts: list[Chart] = field(default_factory=list)
    # Step outputs for GitHub Actions (`name` -> value); counts are added by the renderer.
    outputs: dict[str, str] = field(default_factory=dict)
    # A stage verdict that fails independently of finding severities (verify, promote).
    failed: bool = False
    # The exit code of a failed verdict: 1, or 3 when the environment (a registry that stopped
    # answering) is why it failed and the report still says what happened.
    failed_exit_code: int = EXIT_FAILED
    # A short headline for humans ("3 of 4 cells valid", "host can run image").
    headline: str = ""
    # What was checked (an image reference, a config file): the SARIF location of findings
    # that have no file of their own.
    subject: str = ""
    # A command whose product is a document (a JSON Schema, a matrix) sets it here; the text
    # view prints it verbatim so it can be piped.
    document: str = ""
    # Markdown the job summary (and --format markdown) shows after everything else: promote's
    # and rollback's instructions to undo what they did.
    details: str = ""
    # Things to tell the user that are not findings of a rule and never fail the command
    # (`gpuship lint` globs that matched no file): a warning line, a warning annotation.
    warnings: list[str] = field(default_factory=list)
    # What a stage derives from its findings as reported (lint's counts and headline): run
    # once gpuship.yaml's rule severities are applied (`catalog.apply_overrides`).
    summarise: Callable[[Report], None] | None = field(default=None, repr=False, compare=False)
    # The command wrote to a registry (promote, rollback, prune --apply): what it did stands
    # whatever happens to its report files, so one that cannot be written (a full disk, a bad
    # path) is a warning and the exit code and step outputs still say what happened.
    changes: bool = False

    def add(self, finding: Finding) -> None:
        self.findings.append(finding)

    def counts(self) -> dict[str, int]:
        counts = {s.value: 0 for s in (Severity.ERROR, Severity.WARNING, Severity.NOTE)}
        for finding in self.findings:
            counts[finding.severity.value] += 1
        return counts

    def help_uri(self, finding: Finding) -> str | None:
        if finding.help_uri:
            return finding.help_uri
        rule = self.rules.get(finding.rule)
        return rule.help_uri if rule else None

    def exit_code(self, fail_on: Severity | None) -> int:
        """`failed_exit_code` when the verdict failed, 1 when a finding is at or above `fail_on`,
        else 0."""
        if self.failed:
            return self.failed_exit_code
        if fail_on is not None and any(f.severity.rank >= fail_on.rank for f in self.findings):
            return EXIT_FAILED
        return EXIT_OK
