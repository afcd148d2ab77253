"""Pragmas, config, bad input, stage selection and ARG resolution."""

from __future__ import annotations

from pathlib import Path

from conftest import Linter, positions
from gpuship.lint.config import LintConfig
from gpuship.lint.settings import LintSettings
from gpuship.report import Severity


def test_gpuship_pragma_silences_next_instruction_only(lint: Linter) -> None:
    findings = lint(
        "FROM python:3.12\n# gpuship ignore=GSL301,python-package-unpinned -- bootstrap\n"
        "RUN pip install numpy\nRUN pip install scipy\n"
    )
    assert positions(findings, "GSL301") == [(4, 5)]
    assert positions(findings, "GSL105") == [(4, 17)]


def test_stage_and_global_pragmas(lint: Linter) -> None:
    findings = lint(
        "# gpuship global ignore=base-image-no-digest\n"
        "# gpuship stage ignore=cache\nFROM python:3.12 AS a\nRUN pip install x==1\n"
        "FROM python:3.12\nCOPY --from=a /x /x\nRUN pip install y==1\n"
    )
    assert positions(findings, "GSL103") == []
    assert positions(findings, "GSL301") == [(7, 5)]


def test_hadolint_pragma_maps_to_our_rules(lint: Linter) -> None:
    findings = lint(
        "FROM ubuntu:22.04\n# hadolint ignore=DL3008,DL3009 # legacy\n"
        "RUN apt-get update && apt-get install -y curl\n"
    )
    assert positions(findings, "GSL107") == []
    assert positions(findings, "GSL304") == []


def test_config_disable_and_severity_override(lint: Linter) -> None:
    config = LintConfig.model_validate(
        {"disable": ["security"], "severity": {"cache": "error", "GSL302": "note"}}
    )
    findings = lint(
        "FROM python:3.12\nRUN pip install x==1 && uv pip install --system y==1\n",
        config=config,
    )
    by_rule = {f.rule: f.severity for f in findings}
    assert "GSL903" not in by_rule
    assert by_rule["GSL301"] is Severity.ERROR
    assert by_rule["GSL302"] is Severity.NOTE


def test_trusted_registries_and_required_digest(lint: Linter) -> None:
    config = LintConfig.model_validate(
        {"trusted-registries": ["nvcr.io", "*.example.com"], "require-digest": True}
    )
    findings = lint(
        "FROM python:3.12 AS a\nFROM nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04\n"
        "COPY --from=a /x /x\n",
        config=config,
    )
    assert positions(findings, "GSL104") == [(1, 6)]
    assert {f.severity for f in findings if f.rule == "GSL103"} == {Severity.WARNING}


def test_large_context_copy(lint: Linter) -> None:
    config = LintConfig.model_validate({"large-copy-mib": 1})
    findings = lint(
        "FROM python:3.12\nCOPY data /data\n", {"data/x.parquet": 3 * 1024 * 1024}, config=config
    )
    assert positions(findings, "GSL801") == [(2, 6)]
    assert "3.0 MiB" in next(f.message for f in findings if f.rule == "GSL801")


def test_build_arg_override_and_target(lint: Linter) -> None:
    dockerfile = (
        "ARG TAG=latest\nFROM python:${TAG} AS dev\nRUN pip install x==1\n"
        "FROM python:3.12 AS prod\n"
    )
    findings = lint(dockerfile, build_args={"TAG": "3.12"}, target="dev")
    assert positions(findings, "GSL101") == []
    assert positions(findings, "GSL301") == [(3, 5)]
    assert positions(lint(dockerfile, target="prod"), "GSL301") == []  # prod does not build dev
    # With no --target every target is linted: dev is one (no stage builds on it).
    assert positions(lint(dockerfile), "GSL301") == [(3, 5)]


def test_escape_directive_columns(lint: Linter) -> None:
    findings = lint("# escape=`\nFROM python:3.12\nRUN pip install --no-cache-dir `\n    numpy\n")
    assert positions(findings, "GSL105") == [(4, 5)]


def test_unterminated_heredoc_is_a_finding(lint: Linter) -> None:
    findings = lint("FROM python:3.12\nRUN <<EOF\npip install x\n")
    assert [f.rule for f in findings] == ["GSL001"]
    assert findings[0].location is not None and findings[0].location.line == 2


def test_binary_and_non_utf8_files(tmp_path: Path) -> None:
    from gpuship.lint.engine import lint_file, rule_policy

    config = LintSettings()
    for name, data in (("bin", b"\x7fELF\x00\x00\x01"), ("latin", b"FROM a\nRUN echo \xe9\n")):
        path = tmp_path / name
        path.write_bytes(data)
        result = lint_file(
            path,
            display=name,
            context_dir=tmp_path,
            build_args={},
            target=None,
            config=config,
            policy=rule_policy(config),
        )
        assert [f.rule for f in result.findings] == ["GSL001"]
    assert "UTF-8" in result.findings[0].message
    assert result.findings[0].location is not None and result.findings[0].location.line == 2


def test_ten_megabyte_dockerfiles(lint: Linter) -> None:
    # Generated comment header: parsed and checked to the last line.
    header = ("# " + "x" * 98 + "\n") * 100_000
    findings = lint("FROM ubuntu:22.04\n" + header + "RUN pip install --no-cache-dir numpy\n")
    assert positions(findings, "GSL105") == [(100_002, 32)]
    # A 10 MB heredoc (quadratic in BuildKit's Go parser, linear here) is read whole.
    body = ("y" * 99 + "\n") * 100_000
    findings = lint("FROM ubuntu:22.04\nCOPY <<EOF /data.txt\nRUN pip install x\n" + body + "EOF\n")
    assert [f.rule for f in findings if f.rule == "GSL001"] == []


def test_unknown_rule_in_config_is_an_input_error(lint: Linter) -> None:
    import pytest

    from gpuship.errors import InputError

    with pytest.raises(InputError, match="GSL999"):
        lint("FROM python:3.12\n", config=LintConfig.model_validate({"disable": ["GSL999"]}))


def test_context_is_guessed_from_copy_sources(tmp_path: Path) -> None:
    from gpuship.lint.engine import lint_file, rule_policy

    (tmp_path / "docker").mkdir()
    (tmp_path / "requirements.txt").write_text("numpy\n")
    dockerfile = tmp_path / "docker" / "Dockerfile"
    dockerfile.write_text(
        "FROM python:3.12\nCOPY requirements.txt /r.txt\nRUN pip install --no-cache-dir -r /r.txt\n"
    )
    config = LintSettings()
    result = lint_file(
        dockerfile,
        display="docker/Dockerfile",
        context_dir=None,
        build_args={},
        target=None,
        config=config,
        policy=rule_policy(config),
    )
    assert result.summary.context == str(tmp_path)
    assert [f.rule for f in result.findings if f.rule in ("GSL002", "GSL105")] == ["GSL105"]


def test_fingerprint_survives_moved_lines(lint: Linter) -> None:
    dockerfile = "FROM python:3.12\nCOPY . /app\nRUN pip install --no-cache-dir -r /app/r.txt\n"
    files = {"r.txt": "numpy==1\n"}
    first = {f.rule: f.stable_fingerprint() for f in lint(dockerfile, files)}
    moved = {f.rule: f.stable_fingerprint() for f in lint("\n\n" + dockerfile, files)}
    assert first["GSL601"] == moved["GSL601"] and first["GSL601"]
