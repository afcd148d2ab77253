"""The import-linter contracts in pyproject.toml hold, and they can fail.

The test command runs `lint-imports` on the tree; these tests run it on a copy of the
package with one forbidden import added, so a contract that could never break is caught.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def run_contracts(src: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", str(ROOT / "pyproject.toml")],
        cwd=src,
        env={"PYTHONPATH": str(src), "PATH": str(LINT_IMPORTS.parent)},
        capture_output=True,
        text=True,
        timeout=120,
    )


def copy_with_import(tmp_path: Path, module: str, line: str) -> Path:
    src = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "gpuship", src / "gpuship")
    path = src / "gpuship" / module
    path.write_text(path.read_text() + f"\n{line}\n")
    return src


def test_the_tree_keeps_every_contract() -> None:
    result = run_contracts(ROOT / "src")
    assert result.returncode == 0, result.stdout


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        ("compat/verdict.py", "from gpuship.cli import context", "gpuship.compat.verdict"),
        ("registry/client.py", "import gpuship.release.policy", "gpuship.registry.client"),
        ("lint/engine.py", "import gpuship.image.report", "gpuship.lint.engine"),
        # Stages are independent siblings: route judges through compat, never verify.
        ("route/routing.py", "import gpuship.verify.report", "gpuship.route.routing"),
        ("docs/pages.py", "import gpuship.matrix.cells", "gpuship.docs.pages"),
        # compat sits below every stage and adapter.
        ("compat/verdict.py", "import gpuship.image.needs", "gpuship.compat.verdict"),
        ("compat/audit.py", "import gpuship.nvml.probe", "gpuship.compat.audit"),
        ("image/report.py", "import docker", "gpuship.image.report -> docker"),
        # The host adapter reaches Docker only through the docker adapter.
        ("host/container.py", "import docker", "gpuship.host.container -> docker"),
        # Pure parsers are contracts: no way up into an adapter.
        ("reference.py", "import gpuship.registry.client", "gpuship.reference"),
        # The ground's three rooms are independent: errors, redaction, signals.
        ("redaction.py", "import gpuship.errors", "gpuship.redaction"),
        # The root config model no longer reaches into a stage (or compat) for its section.
        ("config/model.py", "import gpuship.route.config", "gpuship.config.model"),
        ("config/model.py", "import gpuship.compat.config", "gpuship.config.model"),
    ],
)
def test_a_forbidden_import_breaks_a_contract(
    tmp_path: Path, module: str, line: str, broken: str
) -> None:
    result = run_contracts(copy_with_import(tmp_path, module, line))
    assert result.returncode == 1
    assert "BROKEN" in result.stdout
    assert broken in result.stdout
