"""Turn what `gpuship lint` found into the Report: every Dockerfile's findings and summary,
and the image stage's checks of each `--image`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

from gpuship.lint.engine import FileResult
from gpuship.lint.result import LintResult
from gpuship.lint.rules import RULES
from gpuship.report import Finding, Report, Rule, Table
from gpuship.report.catalog import rules_by_id
from gpuship.report.result import Counts

ImageT = TypeVar("ImageT")

# The image stage's checks of one image: findings, their rules, and the image result.
ImageChecked = tuple[Sequence[Finding], Mapping[str, Rule], ImageT]


def lint_report(
    command: str,
    linted: Sequence[FileResult],
    images: Sequence[ImageChecked[ImageT]],
    unmatched: Sequence[str],
) -> Report:
    """One report of every Dockerfile linted and every image checked; `unmatched` are the
    globs that matched no file."""
    report = Report(command=command, rules=rules_by_id(RULES))
    for result in linted:
        report.findings.extend(result.findings)
    for findings, catalog, _ in images:
        report.findings.extend(findings)
        report.rules = {**report.rules, **catalog}
    summaries = tuple(result.summary for result in linted)
    report.tables.append(
        Table(
            title="Dockerfiles",
            headers=("file", "stages", "targets linted", "findings", "suppressed"),
            rows=tuple(
                (
                    s.file,
                    str(len(s.stages)),
                    ", ".join(s.targets) or "-",
                    str(s.findings),
                    str(s.suppressed),
                )
                for s in summaries
            ),
        )
    )
    suppressed = sum(result.suppressed for result in linted)
    results = tuple(image for _, _, image in images) or None
    checked = f"{len(linted)} Dockerfile(s)" + (f", {len(images)} image(s)" if images else "")

    def summarise(final: Report) -> None:
        # Counted as reported: with gpuship.yaml's severities, the image stage's findings too.
        counts = Counts(**final.counts())
        final.result = LintResult(summaries, suppressed, counts, results)
        final.headline = (
            f"{checked}: {counts.error} error(s), {counts.warning} warning(s), "
            f"{counts.note} note(s)"
        )

    report.summarise = summarise
    if not linted and not images and unmatched:
        report.warnings.append(f"no Dockerfile matched: {' '.join(unmatched)}")
    return report
