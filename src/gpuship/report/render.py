"""Choose and write the renderings of a Report: stdout, files, and the runner's files."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from gpuship import gha
from gpuship.files import write_atomically
from gpuship.report.github import render_annotations
from gpuship.report.json_format import render_json
from gpuship.report.markdown import render_markdown
from gpuship.report.model import Report
from gpuship.report.sarif import render_sarif
from gpuship.report.text import render_text

FORMATS = ("text", "json", "github", "sarif", "markdown", "k8s", "arc")
# Formats only some commands produce; a command lists those it has in its FORMATS.
DOCUMENT_FORMATS = frozenset({"k8s", "arc"})


def default_format(environ: Mapping[str, str]) -> str:
    """`github` inside GitHub Actions, `text` elsewhere."""
    return "github" if gha.in_github_actions(environ) else "text"


def render(report: Report, fmt: str, environ: Mapping[str, str], colour: bool = False) -> str:
    """The report in one format, as text."""
    if fmt == "json":
        return render_json(report)
    if fmt == "sarif":
        return render_sarif(report, environ)
    if fmt == "markdown":
        return render_markdown(report)
    if fmt in ("k8s", "arc"):
        # Imported here: it needs PyYAML, which no other output (and no `gpuship lint`) does.
        from gpuship.report.kubernetes import render_arc, render_kubernetes

        return render_kubernetes(report) if fmt == "k8s" else render_arc(report)
    if fmt == "github":
        annotations = render_annotations(report, environ)
        text = render_text(report)
        return text + "".join(line + "\n" for line in annotations.lines)
    return render_text(report, colour=colour)


def emit(
    report: Report,
    fmt: str,
    stdout: TextIO,
    environ: Mapping[str, str],
    output_file: str | None = None,
    sarif_file: str | None = None,
) -> None:
    """Write the report where it was asked for, and to the runner's files under Actions.

    With `--output FILE` the chosen format goes to the file and stdout gets the human view.
    """
    colour = stdout.isatty() and "NO_COLOR" not in environ
    human = default_format(environ)
    if output_file:
        write_atomically(Path(output_file), render(report, fmt, environ), "report")
        stdout.write(render(report, human, environ, colour))
    else:
        stdout.write(render(report, fmt, environ, colour))
    if sarif_file:
        write_atomically(Path(sarif_file), render_sarif(report, environ), "report")
    if gha.in_github_actions(environ):
        _write_runner_files(report, environ, sarif_file)


def step_outputs(report: Report, sarif_file: str | None = None) -> dict[str, str]:
    """The step outputs every command sets (counts, `failed`, the SARIF file it wrote), plus
    the stage's own. The actions' scripts set none of these themselves."""
    counts = report.counts()
    outputs = {
        "error-count": str(counts["error"]),
        "warning-count": str(counts["warning"]),
        "note-count": str(counts["note"]),
        "failed": "true" if report.failed else "false",
    }
    if sarif_file:
        outputs["sarif-file"] = sarif_file
    outputs.update(report.outputs)
    return outputs


def _write_runner_files(report: Report, environ: Mapping[str, str], sarif_file: str | None) -> None:
    summary = environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        not_shown = render_annotations(report, environ).not_shown
        gha.append_summary(Path(summary), render_markdown(report, not_annotated=not_shown))
    output = environ.get("GITHUB_OUTPUT")
    if output:
        gha.write_outputs(Path(output), step_outputs(report, sarif_file))
