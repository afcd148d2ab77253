"""The commands of docs/operations/gpu-runner-host.md and runbook.md: every `bash` block
passes shellcheck, and the blocks marked `<!-- check: runs -->` run here, on the bed's
simulated GPU host (NVML stand-in, a ready host root, a dockerd whose service container "has
a GPU", bed.gpu_service), and exit 0. Blocks that need a real GPU machine (apt, the driver,
systemctl on a booted host) are shellchecked only."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from verify_cli import HostEnv

from bed import hosts
from bed.docker_engine import DockerEngine
from bed.gpu_service import run_gpu_service
from bed.process import require_binary

pytestmark = pytest.mark.integration

DOCS = Path(__file__).resolve().parents[3] / "docs" / "operations"
PAGES = [DOCS / "gpu-runner-host.md", DOCS / "runbook.md"]
BLOCK = re.compile(r"(<!-- check: runs -->\n)?```bash\n(.*?)```", re.S)


def blocks(page: Path) -> list[tuple[bool, str]]:
    return [(bool(m.group(1)), m.group(2)) for m in BLOCK.finditer(page.read_text())]


def test_each_page_has_blocks_and_some_run_here() -> None:
    for page in PAGES:
        found = blocks(page)
        assert found, page
        assert any(runs for runs, _ in found), page


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_block_passes_shellcheck(page: Path, tmp_path: Path) -> None:
    shellcheck = require_binary("shellcheck")
    for number, (_runs, script) in enumerate(blocks(page)):
        path = tmp_path / f"block-{number}.sh"
        path.write_text("#!/usr/bin/env bash\n" + script)
        done = subprocess.run(
            [shellcheck, "-S", "warning", str(path)], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, f"{page.name} block {number}:\n{script}\n{done.stdout}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_the_blocks_marked_runs_run_on_the_simulated_host(
    page: Path, gpu_engine: DockerEngine, gpu_host: HostEnv, tmp_path: Path
) -> None:
    run_gpu_service(gpu_engine, "llm", restart_policy={"Name": "unless-stopped"})
    venv_bin = Path(sys.executable).parent
    env = gpu_host(hosts.A100_550) | gpu_engine.env
    env["PATH"] = f"{venv_bin}:{env['PATH']}"
    for script in (script for runs, script in blocks(page) if runs):
        done = subprocess.run(
            ["bash", "-eo", "pipefail", "-c", script],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert done.returncode == 0, f"{script}\n{done.stdout}\n{done.stderr}"
        assert "GSV302" in done.stdout or "container llm" in done.stdout, done.stdout
