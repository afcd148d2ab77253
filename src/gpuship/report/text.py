"""Terminal rendering: one line per finding, aligned tables, colour only on a TTY."""

from __future__ import annotations

from gpuship.report.model import Finding, Report, Severity, Table

_COLOURS = {Severity.ERROR: "31", Severity.WARNING: "33", Severity.NOTE: "36"}


def render_text(report: Report, colour: bool = False) -> str:
    """Findings, tables and a closing count line, as a person reads them in a terminal."""
    if report.document and not report.findings:
        return report.document if report.document.endswith("\n") else report.document + "\n"
    lines: list[str] = []
    if report.headline:
        lines.append(report.headline)
    lines.extend(f"warning: {message}" for message in report.warnings)
    for table in report.tables:
        lines.extend(render_table(table))
    for finding in report.findings:
        lines.append(_finding_line(finding, colour))
        if finding.fix:
            lines.append(f"    fix: {finding.fix}")
    counts = report.counts()
    lines.append(
        f"{_plural(counts['error'], 'error')}, {_plural(counts['warning'], 'warning')}, "
        f"{_plural(counts['note'], 'note')}" + (" - verdict: FAILED" if report.failed else "")
    )
    return "\n".join(lines) + "\n"


def render_table(table: Table) -> list[str]:
    """A titled table with columns padded to their widest cell."""
    widths = [len(header) for header in table.headers]
    for row in table.rows:
        for index, cell in enumerate(row):
            widths[index] = max(widths[index], len(cell))

    def fmt(cells: tuple[str, ...]) -> str:
        return "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(cells)).rstrip()

    return [
        "",
        table.title,
        fmt(table.headers),
        fmt(tuple("-" * width for width in widths)),
        *(fmt(row) for row in table.rows),
        "",
    ]


def _finding_line(finding: Finding, colour: bool) -> str:
    where = ""
    if finding.location:
        loc = finding.location
        where = loc.file
        if loc.line:
            where += f":{loc.line}"
            if loc.column:
                where += f":{loc.column}"
        where += ": "
    severity = finding.severity.value
    if colour:
        severity = f"\x1b[{_COLOURS[finding.severity]}m{severity}\x1b[0m"
    return f"{where}{severity} {finding.rule} {finding.message}"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"
