"""Each renderer checked against its consumer's rules (SARIF schema, GitHub limits)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import jsonschema
import pytest

from gpuship.gha import escape_data, escape_property, format_output, workflow_command
from gpuship.report import Finding, Location, Report, Rule, Severity, Table
from gpuship.report.github import ANNOTATIONS_PER_LEVEL, render_annotations
from gpuship.report.json_format import report_document
from gpuship.report.markdown import render_markdown
from gpuship.report.render import emit
from gpuship.report.sarif import sarif_document, source_root
from gpuship.report.text import render_text

SCHEMA = Path(__file__).parents[2] / "data" / "schemas" / "sarif-2.1.0-rtm.5.json"

RULE = Rule(
    id="GS001",
    name="base-image-unpinned",
    category="pinning",
    severity=Severity.ERROR,
    summary="Base image has no tag or digest",
    rationale="An untagged base moves under you.",
    fix="Pin the base image by digest.",
    bad_example="FROM ubuntu",
    good_example="FROM ubuntu:24.04@sha256:...",
)
SECRET_RULE = Rule(
    id="GS900",
    name="secret-in-env",
    category="security",
    severity=Severity.WARNING,
    summary="Secret in ENV",
    security_severity=7.5,
)


def sample_report(count: int = 3) -> Report:
    report = Report(command="lint", rules={RULE.id: RULE, SECRET_RULE.id: SECRET_RULE})
    severities = [Severity.ERROR, Severity.WARNING, Severity.NOTE]
    for index in range(count):
        report.add(
            Finding(
                rule=RULE.id if index % 2 == 0 else "GS900",
                severity=severities[index % 3],
                message=f"problem {index}: 100% bad, a:b, c\nsecond line",
                location=Location(
                    "docker/Dockerfile", line=index + 1, column=3, end_line=index + 1
                ),
                fix="do better",
            )
        )
    return report


def test_sarif_validates_against_schema_and_has_github_fields() -> None:
    report = sample_report(6)
    report.add(Finding(rule="build-failed", severity=Severity.ERROR, message="no location"))
    report.subject = "registry.local/app:1"
    document = sarif_document(report, root=Path.cwd())
    jsonschema.validate(document, json.loads(SCHEMA.read_text()))
    run = document["runs"][0]
    rules = {rule["id"]: rule for rule in run["tool"]["driver"]["rules"]}
    assert rules["GS001"]["helpUri"].endswith("/rules/GS001.md")
    assert rules["GS001"]["help"]["text"] and rules["GS001"]["fullDescription"]["text"]
    assert rules["GS900"]["properties"]["security-severity"] == "7.5"
    assert "security" in rules["GS900"]["properties"]["tags"]
    # A finding outside the catalog still gets a rule entry, so ruleIndex stays valid.
    assert "build-failed" in rules
    for result in run["results"]:
        assert run["tool"]["driver"]["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
        assert result["partialFingerprints"]["gpushipFingerprint/v1"]
        assert result["locations"][0]["physicalLocation"]["region"]["startLine"] >= 1
    located = next(r for r in run["results"] if r["ruleId"] == "GS001")
    assert located["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == (
        "docker/Dockerfile"
    )
    unlocated = next(r for r in run["results"] if r["ruleId"] == "build-failed")
    assert unlocated["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == (
        "registry.local/app:1"
    )


def test_annotation_escaping() -> None:
    assert escape_data("a%b\r\nc") == "a%25b%0D%0Ac"
    assert escape_property("x:y,z%\n") == "x%3Ay%2Cz%25%0A"
    line = workflow_command("error", "50% off\nnow", {"file": "a,b:c.txt", "line": 3})
    assert line == "::error file=a%2Cb%3Ac.txt,line=3::50%25 off%0Anow"


def test_annotations_capped_per_level_and_counted() -> None:
    report = sample_report(75)  # 25 of each severity
    annotations = render_annotations(report, {})
    assert len(annotations.lines) == 3 * ANNOTATIONS_PER_LEVEL
    assert annotations.not_shown == 75 - 3 * ANNOTATIONS_PER_LEVEL
    assert sum(line.startswith("::error ") for line in annotations.lines) == 10
    assert sum(line.startswith("::notice ") for line in annotations.lines) == 10
    first = annotations.lines[0]
    assert "file=docker/Dockerfile" in first and "col=3" in first
    assert "%0A" in first and "\n" not in first


def test_annotation_paths_relative_to_workspace(tmp_path: Path) -> None:
    report = Report(command="lint")
    report.add(
        Finding("GS001", Severity.ERROR, "m", Location(str(tmp_path / "sub" / "Dockerfile"), 2))
    )
    line = render_annotations(report, {"GITHUB_WORKSPACE": str(tmp_path)}).lines[0]
    assert "file=sub/Dockerfile" in line


def test_summary_under_limit_with_10000_findings() -> None:
    report = sample_report(10_000)
    markdown = render_markdown(report, not_annotated=9_970)
    size = len(markdown.encode())
    assert size < 1024 * 1024
    assert "| failed |" not in markdown  # verdict column says passed/failed from report.failed
    assert "| passed | 3334 | 3333 | 3333 |" in markdown
    # Rows that do not fit are counted, never silently dropped.
    assert "more findings are not listed here" in markdown
    assert "9970 findings were not shown as annotations" in markdown
    assert markdown.index("| verdict |") < markdown.index("<details>")


def test_summary_lists_everything_when_small() -> None:
    report = sample_report(3)
    report.tables.append(Table("Cells", ("image", "cuda"), (("app", "12.4"),)))
    markdown = render_markdown(report)
    assert "more findings" not in markdown
    assert markdown.count("problem ") == 3
    assert "| app | 12.4 |" in markdown
    assert "[GS001](" in markdown


def test_step_output_multiline_uses_random_delimiter() -> None:
    single = format_output("digest", "sha256:abc")
    assert single == "digest=sha256:abc\n"
    first = format_output("matrix", "a\nb")
    second = format_output("matrix", "a\nb")
    delimiter = first.splitlines()[0].split("<<", 1)[1]
    assert delimiter.startswith("ghadelimiter_")
    assert first.splitlines() == [f"matrix<<{delimiter}", "a", "b", delimiter]
    assert first != second


def test_json_document_shape() -> None:
    report = sample_report(2)
    report.result = {"cells": 2}
    document = report_document(report)
    assert set(document) >= {"tool", "version", "command", "findings", "summary", "result"}
    finding = document["findings"][0]
    assert set(finding) >= {
        "rule", "severity", "message", "file", "line", "column", "end_line", "help_uri",
        "fingerprint",
    }  # fmt: skip
    assert document["summary"] == {"error": 1, "warning": 1, "note": 0}
    assert finding["help_uri"].endswith("GS001.md")


def test_fingerprint_ignores_line_moves() -> None:
    a = Finding("GS001", Severity.ERROR, "m", Location("Dockerfile", 1))
    b = Finding("GS001", Severity.ERROR, "m", Location("Dockerfile", 9))
    c = Finding("GS001", Severity.ERROR, "other", Location("Dockerfile", 1))
    assert a.stable_fingerprint() == b.stable_fingerprint() != c.stable_fingerprint()
    # A line number quoted in the message moves with the file too.
    d = Finding("GS001", Severity.ERROR, "install after COPY . (line 10)", Location("F", 11))
    e = Finding("GS001", Severity.ERROR, "install after COPY . (line 12)", Location("F", 13))
    assert d.stable_fingerprint() == e.stable_fingerprint()


def test_text_colour_only_when_asked() -> None:
    report = sample_report(1)
    assert "\x1b[" not in render_text(report)
    assert "\x1b[31merror\x1b[0m" in render_text(report, colour=True)
    assert render_text(report).splitlines()[-1] == "1 error, 0 warnings, 0 notes"


def test_emit_under_actions_writes_summary_and_outputs(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    outputs = tmp_path / "outputs"
    env = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_STEP_SUMMARY": str(summary),
        "GITHUB_OUTPUT": str(outputs),
    }
    report = sample_report(3)
    report.outputs["matrix"] = '{"include":[]}'
    stdout = io.StringIO()
    emit(report, "github", stdout, env, sarif_file=str(tmp_path / "out" / "r.sarif"))
    assert "::error " in stdout.getvalue()
    assert summary.read_text().startswith("## gpuship lint")
    written = outputs.read_text()
    assert "error-count=1\n" in written and 'matrix={"include":[]}\n' in written
    assert json.loads((tmp_path / "out" / "r.sarif").read_text())["version"] == "2.1.0"


def test_emit_output_file_keeps_human_view_on_stdout(tmp_path: Path) -> None:
    stdout = io.StringIO()
    emit(sample_report(1), "json", stdout, {}, output_file=str(tmp_path / "r.json"))
    assert json.loads((tmp_path / "r.json").read_text())["command"] == "lint"
    assert stdout.getvalue().endswith("1 error, 0 warnings, 0 notes\n")


@pytest.mark.parametrize("severity", list(Severity))
def test_exit_code_follows_fail_on(severity: Severity) -> None:
    report = Report(command="x", findings=[Finding("r", severity, "m")])
    assert report.exit_code(Severity.ERROR) == (1 if severity is Severity.ERROR else 0)
    assert report.exit_code(Severity.NOTE) == 1
    assert report.exit_code(None) == 0
    report.failed = True
    assert report.exit_code(None) == 1


def test_sarif_paths_are_relative_to_the_repository_root_from_a_subdirectory(
    tmp_path: Path,
) -> None:
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "docker").mkdir()
    report = Report(command="lint")
    report.add(Finding("GS001", Severity.ERROR, "m", Location("Dockerfile", 2)))
    report.add(Finding("GS001", Severity.ERROR, "m", Location("../Dockerfile.base", 1)))
    report.add(Finding("GS001", Severity.ERROR, "m", Location(str(tmp_path / "x" / "y"), 1)))
    for environ in ({}, {"GITHUB_WORKSPACE": str(root)}):
        cwd = root / "docker"
        run = sarif_document(report, source_root(environ, cwd), cwd)["runs"][0]
        uris = [r["locations"][0]["physicalLocation"]["artifactLocation"] for r in run["results"]]
        assert [u["uri"] for u in uris] == [
            "docker/Dockerfile",
            "Dockerfile.base",
            (tmp_path / "x" / "y").as_uri(),  # outside the checkout: an absolute URI
        ]
        assert {u["uriBaseId"] for u in uris} == {"%SRCROOT%"}
        assert run["originalUriBaseIds"] == {"%SRCROOT%": {"uri": root.resolve().as_uri() + "/"}}
    # No git work tree and no workspace: the working directory is the root.
    plain = tmp_path / "plain"
    plain.mkdir()
    assert source_root({}, plain) == plain.resolve()


def test_charts_render_as_mermaid_xychart_in_the_summary_only() -> None:
    from gpuship.report import Chart, Series

    chart = Chart(
        'p99 "vs" load',
        "arrival rate",
        ("5/s", "10/s"),
        "ms",
        (Series("candidate p99", (12.5, 40.0)), Series("stable p99", (11.0, 12.25))),
    )
    report = Report(command="probe", charts=[chart])
    summary = render_markdown(report)
    block = summary[summary.index("```mermaid") :]
    assert block.splitlines()[:7] == [
        "```mermaid",
        "xychart-beta",
        "    title \"p99 'vs' load\"",
        '    x-axis "arrival rate" ["5/s", "10/s"]',
        '    y-axis "ms"',
        "    line [12.5, 40]",
        "    line [11, 12.25]",
    ]
    assert "1. candidate p99, 2. stable p99" in summary
    assert "mermaid" not in render_text(report)
