"""Lint a Dockerfile written into a temporary build context."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuship.lint.config import LintConfig
from gpuship.lint.engine import lint_file, rule_policy
from gpuship.report import Finding, Report
from gpuship.report.catalog import apply_overrides


def lint_text(
    root: Path,
    dockerfile: str,
    files: dict[str, str | bytes | int] | None = None,
    config: LintConfig | None = None,
    build_args: dict[str, str] | None = None,
    target: str | None = None,
    platform: str | None = "linux/amd64",
) -> list[Finding]:
    """Write `dockerfile` and `files` (text, bytes, or an int size for a sparse file) and lint.

    The platform is fixed (linux/amd64) so TARGETARCH does not depend on the test machine."""
    for name, content in (files or {}).items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, int):
            with path.open("wb") as handle:
                handle.truncate(content)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    path = root / "Dockerfile"
    path.write_text(dockerfile)
    settings = (config or LintConfig()).settings()
    policy = rule_policy(settings)
    result = lint_file(
        path,
        display="Dockerfile",
        context_dir=root,
        build_args=build_args or {},
        target=target,
        config=settings,
        policy=policy,
        platform=platform,
    )
    # The configured severities, set as the CLI sets every command's.
    report = Report(command="lint", findings=list(result.findings))
    apply_overrides(report, policy)
    return report.findings


def positions(findings: list[Finding], rule: str) -> list[tuple[int, int]]:
    """(line, column) of each finding of `rule`."""
    return [
        (f.location.line or 0, f.location.column or 0)
        for f in findings
        if f.rule == rule and f.location is not None
    ]


def assert_found_at(
    lint: Linter,
    rule: str,
    dockerfile: str,
    files: dict[str, str | bytes | int],
    expected: list[tuple[int, int]],
) -> None:
    """`rule` is reported exactly at `expected` (line, column) pairs, and nowhere else."""
    findings = lint(dockerfile, files)
    assert positions(findings, rule) == expected, [
        (f.rule, f.location, f.message) for f in findings
    ]


class Linter:
    """`lint(dockerfile, files)` bound to a temporary directory."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def __call__(
        self, dockerfile: str, files: dict[str, str | bytes | int] | None = None, **kwargs: object
    ) -> list[Finding]:
        return lint_text(self.root, dockerfile, files, **kwargs)  # type: ignore[arg-type]


@pytest.fixture
def lint(tmp_path: Path) -> Linter:
    """Lint a Dockerfile in a fresh build context."""
    return Linter(tmp_path)
