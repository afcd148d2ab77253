"""The job summary: a short table first, details folded, always well under GitHub's 1 MiB."""

from __future__ import annotations

from gpuship.report.model import Chart, Finding, Report, Severity, Table

# GitHub refuses a step summary over 1024 KiB; leave room for other steps' content.
SUMMARY_BUDGET_BYTES = 512 * 1024
_ICONS = {Severity.ERROR: "❌", Severity.WARNING: "⚠️", Severity.NOTE: "ℹ️"}  # noqa: RUF001


def render_markdown(
    report: Report, budget: int = SUMMARY_BUDGET_BYTES, not_annotated: int = 0
) -> str:
    """Markdown for `$GITHUB_STEP_SUMMARY`; rows past `budget` bytes are counted, not dropped."""
    counts = report.counts()
    verdict = "failed" if report.failed else "passed"
    parts = [f"## gpuship {report.command}\n"]
    if report.headline:
        parts.append(f"{report.headline}\n")
    parts.extend(f"{_ICONS[Severity.WARNING]} {message}\n" for message in report.warnings)
    parts.append(
        "| verdict | errors | warnings | notes |\n|---|---|---|---|\n"
        f"| {verdict} | {counts['error']} | {counts['warning']} | {counts['note']} |\n"
    )
    if not_annotated:
        parts.append(
            f"\n{not_annotated} findings were not shown as annotations (GitHub shows at most 10 "
            "per level in a step); all are listed below.\n"
        )
    parts.extend(render_table_markdown(table) for table in report.tables)
    parts.extend(render_chart_markdown(chart) for chart in report.charts)
    if report.findings:
        parts.append(_findings_section(report, budget - sum(len(p.encode()) for p in parts)))
    if report.details:
        parts.append(report.details)
    return "\n".join(parts)


def render_table_markdown(table: Table) -> str:
    """A titled GitHub-flavoured Markdown table."""
    lines = [
        f"### {table.title}\n",
        "| " + " | ".join(_cell(h) for h in table.headers) + " |",
        "|" + "---|" * len(table.headers),
    ]
    lines.extend("| " + " | ".join(_cell(c) for c in row) + " |" for row in table.rows)
    return "\n".join(lines) + "\n"


def render_chart_markdown(chart: Chart) -> str:
    """A Mermaid `xychart-beta` line chart (GitHub draws it), its legend in a line below:
    xychart has no legend of its own, and its lines take the theme's colours in order."""
    lines = [
        f"### {chart.title}\n",
        "```mermaid",
        "xychart-beta",
        f"    title {_quoted(chart.title)}",
        f"    x-axis {_quoted(chart.x_label)} [{', '.join(_quoted(x) for x in chart.x_values)}]",
        f"    y-axis {_quoted(chart.y_label)}",
    ]
    lines += [f"    line [{', '.join(_number(v) for v in s.values)}]" for s in chart.series]
    lines.append("```")
    legend = ", ".join(f"{index + 1}. {s.name}" for index, s in enumerate(chart.series))
    return "\n".join(lines) + f"\n\nLines, in the theme's colour order: {legend}.\n"


def _quoted(text: str) -> str:
    return '"' + text.replace('"', "'") + '"'


def _number(value: float) -> str:
    return f"{value:.6g}"


def _findings_section(report: Report, budget: int) -> str:
    ordered = sorted(report.findings, key=lambda f: -f.severity.rank)
    header = (
        f"<details><summary>Findings ({len(ordered)})</summary>\n\n"
        "| | rule | where | message |\n|---|---|---|---|\n"
    )
    footer = "\n</details>\n"
    rows: list[str] = []
    used = len(header.encode()) + len(footer.encode()) + 200
    for index, finding in enumerate(ordered):
        row = _finding_row(report, finding)
        if used + len(row.encode()) > budget:
            rows.append(
                f"\n{len(ordered) - index} more findings are not listed here to keep the summary "
                "under GitHub's size limit; see the JSON or SARIF report.\n"
            )
            break
        rows.append(row)
        used += len(row.encode())
    return header + "".join(rows) + footer


def _finding_row(report: Report, finding: Finding) -> str:
    where = ""
    if finding.location:
        where = finding.location.file
        if finding.location.line:
            where += f":{finding.location.line}"
    rule = finding.rule
    uri = report.help_uri(finding)
    if uri:
        rule = f"[{rule}]({uri})"
    return f"| {_ICONS[finding.severity]} | {rule} | {_cell(where)} | {_cell(finding.message)} |\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
