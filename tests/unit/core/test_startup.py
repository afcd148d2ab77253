"""What `gpuship lint` imports to lint one Dockerfile: its own command module only, no YAML
parser, no pydantic, no registry or Docker code. Start-up time is measured in bench/startup;
this holds the import set, which is what start-up time is made of."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

_SCRIPT = """
import io, json, sys
from gpuship.cli.main import main
code = main(sys.argv[1:], stdout=io.StringIO())
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _imported(tmp_path: Path, *argv: str) -> tuple[int, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, *argv],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(done.stdout.splitlines()[-1])
    return result["code"], result["modules"]


def test_lint_imports_only_what_lint_needs(tmp_path: Path) -> None:
    (tmp_path / "Dockerfile").write_text("FROM ubuntu:24.04\nRUN echo hi\n")
    code, modules = _imported(tmp_path, "lint", "Dockerfile", "--fail-on", "never")
    assert code == 0
    commands = [m for m in modules if m.startswith("gpuship.cli.commands.")]
    assert commands == ["gpuship.cli.commands.lint"]
    for heavy in ("yaml", "pydantic", "packaging", "requests", "docker", "gpuship.registry.client"):
        assert heavy not in modules, heavy
    # A file that asks no CUDA question loads no part of the knowledge base (issue #37).
    for knowledge in ("gpuship.cuda.knowledge", "gpuship.cuda.knowledge_data", "tempfile"):
        assert knowledge not in modules, knowledge
    # Text asked for, text rendered: no other format's renderer is loaded.
    for renderer in ("json_format", "sarif", "markdown", "github"):
        assert f"gpuship.report.{renderer}" not in modules, renderer


def test_help_still_lists_every_command(tmp_path: Path) -> None:
    code, modules = _imported(tmp_path, "--help")
    assert code == 0
    assert len([m for m in modules if m.startswith("gpuship.cli.commands.")]) >= 16


def test_the_registry_access_stages_name_does_not_load_the_http_stack(tmp_path: Path) -> None:
    # Stages take a RegistryAccess in their signatures; the client behind it loads on demand.
    script = "import sys, gpuship.registry.access; print('requests' in sys.modules)"
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == "False"
