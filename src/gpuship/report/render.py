"""Choose and write the renderings of a Report: stdout, files, and the runner's files."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TextIO

from gpuship import gha
from gpuship.errors import InputError
from gpuship.files import write_atomically
from gpuship.redaction import redact_credentials
from gpuship.report.model import Report
from gpuship.report.text import render_text

FORMATS = ("text", "json", "github", "sarif", "markdown", "k8s", "arc")
# Formats only some commands produce; a command lists those it has in its FORMATS.
DOCUMENT_FORMATS = frozenset({"k8s", "arc"})


def default_format(environ: Mapping[str, str]) -> str:
    """`github` inside GitHub Actions, `text` elsewhere."""
    return "github" if gha.in_github_actions(environ) else "text"


def render(report: Report, fmt: str, environ: Mapping[str, str], colour: bool = False) -> str:
    """The report in one format, as text, credentials in URLs hidden (`redact_credentials`)."""
    return redact_credentials(_render(report, fmt, environ, colour))


def _render(report: Report, fmt: str, environ: Mapping[str, str], colour: bool) -> str:
    # Each format's renderer is imported when asked for: a one-file lint in an editor or a
    # pre-commit hook renders text only, and its start-up is what it waits for (issue #37).
    if fmt == "json":
        from gpuship.report.json_format import render_json

        return render_json(report)
    if fmt == "sarif":
        from gpuship.report.sarif import render_sarif

        return render_sarif(report, environ)
    if fmt == "markdown":
        from gpuship.report.markdown import render_markdown

        return render_markdown(report)
    if fmt in ("k8s", "arc"):
        # Imported here: it needs PyYAML, which no other output (and no `gpuship lint`) does.
        from gpuship.report.kubernetes import render_arc, render_kubernetes

        return render_kubernetes(report) if fmt == "k8s" else render_arc(report)
    if fmt == "github":
        from gpuship.report.github import render_annotations

        # For the runner's log: the text quotes file names and registry answers, and only the
        # annotations (escaped by `workflow_command`) may be commands.
        annotations = render_annotations(report, environ)
        text = gha.neutralise(render_text(report))
        return text + "".join(line + "\n" for line in annotations.lines)
    return render_text(report, colour=colour)


def _for_the_log(text: str, fmt: str) -> str:
    """What goes to stdout under Actions, where the runner reads it for commands: `github`
    output is made so already; JSON keeps its data, `##[` written with an escape."""
    if fmt == "github":
        return text
    if fmt in ("json", "sarif"):
        return gha.neutralise_json(text)
    return gha.neutralise(text)


def emit(
    report: Report,
    fmt: str,
    stdout: TextIO,
    environ: Mapping[str, str],
    output_file: str | None = None,
    sarif_file: str | None = None,
) -> list[str]:
    """Write the report where it was asked for, and to the runner's files under Actions.

    With `--output FILE` the chosen format goes to the file and stdout gets the human view.
    A file that cannot be written is an error (InputError), except for a report that
    `changes` a registry: then everything else is still written and the problems are
    returned, for the caller to warn about.
    """
    problems: list[str] = []
    colour = stdout.isatty() and "NO_COLOR" not in environ
    shown = default_format(environ) if output_file else fmt
    if output_file:
        _write_file(report, Path(output_file), lambda: render(report, fmt, environ), problems)
    text = render(report, shown, environ, colour)
    stdout.write(_for_the_log(text, shown) if gha.in_github_actions(environ) else text)
    if sarif_file:
        _write_file(report, Path(sarif_file), lambda: render(report, "sarif", environ), problems)
    if gha.in_github_actions(environ):
        _write_runner_files(report, environ, sarif_file, problems)
    return problems


def _write_file(report: Report, path: Path, text: Callable[[], str], problems: list[str]) -> None:
    try:
        write_atomically(path, text(), "report")
    except InputError as error:
        if not report.changes:
            raise
        problems.append(str(error))


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


def _write_runner_files(
    report: Report, environ: Mapping[str, str], sarif_file: str | None, problems: list[str]
) -> None:
    """Step outputs first: what later steps act on matters more than the job summary."""
    output = environ.get("GITHUB_OUTPUT")
    if output:
        outputs = {k: redact_credentials(v) for k, v in step_outputs(report, sarif_file).items()}
        _append(report, output, lambda: gha.write_outputs(Path(output), outputs), problems)
    summary = environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        from gpuship.report.github import render_annotations
        from gpuship.report.markdown import render_markdown

        not_shown = render_annotations(report, environ).not_shown
        markdown = render_markdown(report, not_annotated=not_shown)
        redacted = redact_credentials(markdown)
        _append(report, summary, lambda: gha.append_summary(Path(summary), redacted), problems)


def _append(report: Report, path: str, write: Callable[[], None], problems: list[str]) -> None:
    try:
        write()
    except OSError as error:
        if not report.changes:
            raise
        problems.append(f"{path}: cannot write the runner's file: {error.strerror or error}")
