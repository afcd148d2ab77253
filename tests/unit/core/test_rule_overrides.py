"""Rule severities from gpuship.yaml (`rules:`, `lint:`): resolved once, applied to every
command's Report at the CLI boundary. One test per stage runs its command for real."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest

from bed.oci import make_image, write_oci_layout
from gpuship.cli.main import main
from gpuship.cli.rules_catalog import rule_overrides
from gpuship.errors import InputError
from gpuship.lint.engine import lint_file
from gpuship.lint.settings import LintSettings
from gpuship.report import Finding, Report, Severity
from gpuship.report.catalog import apply_overrides
from json_results import checked

E, W, N = Severity.ERROR, Severity.WARNING, Severity.NOTE


def run(cwd: Path, config: str, *argv: str) -> tuple[int, dict[str, object], str]:
    (cwd / "gpuship.yaml").write_text(config)
    out, err = io.StringIO(), io.StringIO()
    code = main(["--config", str(cwd / "gpuship.yaml"), *argv, "--format", "json"], {}, out, err)
    return code, checked(out.getvalue()) if out.getvalue() else {}, err.getvalue()


def severities(document: dict[str, object], prefix: str) -> dict[str, str]:
    findings = document["findings"]
    assert isinstance(findings, list)
    return {f["rule"]: f["severity"] for f in findings if f["rule"].startswith(prefix)}


def test_an_id_beats_a_name_beats_a_category_and_lint_wins_at_its_level() -> None:
    overrides = rule_overrides(
        {"cuda": "note", "verify-driver": "warning", "GSV203": "off", "GSL501": "warning"},
        {"lint": LintSettings(severity={"GSL501": "error"})},
    )
    assert overrides["GSV201"] is N  # by category
    assert overrides["GSV202"] is W  # by name, over the category
    assert overrides["GSV203"] is None  # by id, over the category
    assert overrides["GSL501"] is E  # lint.severity over rules: for the same id
    assert overrides["GSI503"] is N and "GSV101" not in overrides  # runtime is not cuda


def test_lint_enable_and_disable_keep_their_meaning() -> None:
    overrides = rule_overrides({}, {"lint": LintSettings(enable=("pinning",), disable=("GSL105",))})
    assert overrides["GSL105"] is None and overrides["GSL201"] is None
    assert "GSL101" not in overrides  # enabled and not overridden: keeps its severity
    assert not any(rule_id.startswith("GSV") for rule_id in overrides)


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("GSX999", "rules: 'GSX999' names no rule id, rule name or category"),
        ("release-write-failed", "rules: GSR102 (release-write-failed) reports what happened"),
        ("GSB302", "rules: GSB302 (push-refused) reports what happened"),
    ],
)
def test_unknown_or_unconfigurable_keys_are_config_errors(key: str, message: str) -> None:
    with pytest.raises(InputError, match="^" + re.escape(message)):
        rule_overrides({key: "note"}, {"lint": LintSettings()})


@pytest.mark.parametrize(
    ("config", "where", "message"),
    [
        ("verify: {}\nrules:\n  nope: off\n", "3:3", "rules: 'nope' names no rule id"),
        ("lint:\n  enable: [pinning, bogus]\n", "2:21", "lint.enable: 'bogus' names no rule"),
        ("lint:\n  severity:\n    GSB302: note\n", "3:5", "lint.severity: 'GSB302' names no"),
        ("rules:\n  GSB302: note\n", "2:3", "rules: GSB302 (push-refused) reports what"),
    ],
)
def test_a_bad_rule_key_names_its_line(tmp_path: Path, config: str, where: str, message: str):
    code, _, err = run(tmp_path, config, "rules")
    assert code == 2
    assert err.startswith(f"gpuship: error: {tmp_path / 'gpuship.yaml'}:{where}: {message}")
    assert err.count("\n") == 1


def test_a_bad_rule_key_from_the_environment_names_the_variable() -> None:
    out, err = io.StringIO(), io.StringIO()
    assert main(["rules"], {"GPUSHIP_RULES__NOPE": "off"}, out, err) == 2
    assert err.getvalue().startswith(
        "gpuship: error: environment GPUSHIP_RULES__NOPE: rules: 'nope' names no rule id"
    )


def test_a_category_leaves_what_happened_alone() -> None:
    overrides = rule_overrides({"release": "off"}, {"lint": LintSettings()})
    assert overrides["GSR201"] is None  # prune-delete: a judgement of retention
    assert "GSR101" not in overrides and "GSR102" not in overrides
    report = Report(command="promote", failed=True)
    report.add(Finding("GSR102", E, "writing tag stable failed"))
    apply_overrides(report, overrides)
    assert report.failed and [f.severity for f in report.findings] == [E]


def test_a_verdict_failed_only_by_lowered_errors_passes() -> None:
    report = Report(command="verify", failed=True)
    report.add(Finding("GSV202", E, "driver too old"))
    report.add(Finding("GSV105", W, "ECC errors"))
    apply_overrides(report, {"GSV202": W, "GSV105": None})
    assert not report.failed
    assert [(f.rule, f.severity) for f in report.findings] == [("GSV202", W)]
    still = Report(command="verify", failed=True)
    still.add(Finding("GSV202", E, "driver too old"))
    still.add(Finding("GSV203", E, "no kernel for sm_90"))
    apply_overrides(still, {"GSV202": W})
    assert still.failed  # another error still fails it


def test_the_lint_engine_leaves_severities_to_the_boundary(tmp_path: Path) -> None:
    # Applied once, by apply_overrides: the engine only skips the rules turned off.
    path = tmp_path / "Dockerfile"
    path.write_text("FROM python\n# gpuship ignore=GSL103\nUSER 1\n")
    result = lint_file(
        path,
        display="Dockerfile",
        context_dir=tmp_path,
        build_args={},
        target=None,
        config=LintSettings(),
        policy={"GSL101": E, "GSL103": None},
        platform="linux/amd64",
    )
    assert {f.rule: f.severity for f in result.findings}["GSL101"] is W
    assert "GSL103" not in {f.rule for f in result.findings}
    assert result.suppressed == 0  # a pragma naming a rule that is off silences nothing


def test_a_stage_summarises_the_findings_as_reported() -> None:
    seen: list[dict[str, int]] = []
    for overrides in ({"GSL101": E}, {}):
        report = Report(command="lint", summarise=lambda final: seen.append(final.counts()))
        report.add(Finding("GSL101", W, "untagged base"))
        apply_overrides(report, overrides)
    assert seen == [{"error": 1, "warning": 0, "note": 0}, {"error": 0, "warning": 1, "note": 0}]


def test_yaml_bare_off_turns_a_rule_off(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM python\nUSER 1\n")
    code, document, _ = run(tmp_path, "rules:\n  GSL101: off\n", "lint", str(tmp_path))
    assert code == 0 and "GSL101" not in severities(document, "GSL")


def test_lint(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM python\nUSER 1\n")
    code, document, _ = run(tmp_path, "fail-on: error\n", "lint", str(tmp_path))
    assert code == 0 and severities(document, "GSL")["GSL101"] == "warning"
    config = "rules:\n  base-image-untagged: error\n  GSL103: off\n"
    code, document, _ = run(tmp_path, config, "lint", str(tmp_path))
    assert code == 1 and document["failed"] is True
    found = severities(document, "GSL")
    assert found["GSL101"] == "error" and "GSL103" not in found
    assert document["summary"] == {"error": 1, "warning": 0, "note": 0}
    config += "lint:\n  severity: {GSL101: note}\n"
    code, document, _ = run(tmp_path, config, "lint", str(tmp_path))
    assert code == 0 and severities(document, "GSL")["GSL101"] == "note"


def test_image(tmp_path: Path) -> None:
    # 2 MiB of zeros against a 1 MiB budget: GSI802 image-over-size-budget, an error.
    image = make_image([{"app/blob.bin": bytes(2 << 20)}])
    layout = write_oci_layout(tmp_path / "layout", image, tag="1")
    config = "inspect:\n  size-budget-mib: 1\n  required-labels: []\n"
    code, document, _ = run(tmp_path, config, "inspect", f"oci:{layout}:1")
    assert code == 1 and severities(document, "GSI")["GSI802"] == "error"
    code, document, _ = run(
        tmp_path, config + "rules: {size: warning}\n", "inspect", f"oci:{layout}:1"
    )
    assert code == 0 and severities(document, "GSI")["GSI802"] == "warning"


def test_lint_counts_an_images_findings_with_their_configured_severity(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM python:3.12@sha256:" + "a" * 64 + "\nUSER 1\n")
    layout = write_oci_layout(tmp_path / "layout", make_image([{"app/x": bytes(2 << 20)}]), "1")
    config = "inspect:\n  size-budget-mib: 1\n  required-labels: []\nrules: {GSI802: note}\n"
    argv = ("lint", str(tmp_path / "Dockerfile"), "--image", f"oci:{layout}:1")
    code, document, _ = run(tmp_path, config, *argv)
    assert code == 0, document["findings"]
    assert severities(document, "GSI")["GSI802"] == "note"
    result = document["result"]
    assert isinstance(result, dict) and result["counts"] == document["summary"]
    assert f"{result['counts']['note']} note(s)" in str(document["headline"])


def test_build(tmp_path: Path) -> None:
    config = (
        "images:\n  - name: train\n    repository: 127.0.0.1:5000/acme/train\n"
        "    axes: {cuda: ['12.4', '12.6']}\n    include: [{cuda: '12.4', torch: '2.7.0'}]\n"
    )
    code, document, _ = run(tmp_path, config, "matrix", "--drop-invalid")
    assert code == 0 and severities(document, "GSB") == {"GSB101": "note"}
    code, document, _ = run(
        tmp_path, config + "rules: {matrix-invalid-cell: error}\n", "matrix", "--drop-invalid"
    )
    assert code == 1 and severities(document, "GSB") == {"GSB101": "error"}


def test_kb(tmp_path: Path) -> None:
    argv = ("kb", "check-require", "--env", "NVIDIA_REQUIRE_CUDA=cuda>=12.4", "--cuda", "12.2")
    code, document, _ = run(tmp_path, "version: 1\n", *argv)
    assert code == 1 and document["failed"] is True
    code, document, _ = run(tmp_path, "rules:\n  cuda-require-unsatisfied: warning\n", *argv)
    assert code == 0 and document["failed"] is False
    assert severities(document, "GSK") == {"GSK101": "warning"}
    result = document["result"]
    assert isinstance(result, dict) and result["satisfied"] is False  # what it found


def test_docs(tmp_path: Path) -> None:
    (tmp_path / "action.yml").write_text(
        "name: x\ndescription: y\nruns:\n  using: composite\n  steps: []\n"
    )
    (tmp_path / "README.md").write_text(
        "<!-- gpuship:actions:start -->\n<!-- gpuship:actions:end -->\n"
    )
    argv = ("docs", "--root", str(tmp_path), "--check")
    code, document, _ = run(tmp_path, "version: 1\n", *argv)
    assert code == 1 and set(severities(document, "GSD").values()) == {"error"}
    code, document, _ = run(tmp_path, "rules: {GSD101: warning}\n", *argv)
    assert code == 0 and set(severities(document, "GSD").values()) == {"warning"}


def test_rules_lists_the_effective_severity_of_every_stage(tmp_path: Path) -> None:
    config = "rules: {GSV105: note, GSI702: off, GSK201: error}\n"
    code, document, _ = run(tmp_path, config, "rules")
    assert code == 0
    result = document["result"]
    assert isinstance(result, dict)
    effective = {r["id"]: r["severity"] for r in result["rules"]}
    assert effective["GSV105"] == "note" and effective["GSI702"] == "off"
    assert effective["GSK201"] == "error" and effective["GSR102"] == "error"
