"""A release is in the registry once its tags moved: a report or record file that cannot be
written (a full disk, a bad path) is a warning, and the exit code and step outputs still say
what the release did. The full disk is real: a tmpfs of a few KiB, filled up (mounting it
needs root, as the CI runs the tests).

Before the fix, a finished promote whose `--output` hit a full disk or whose `--record-file`
was a bad path exited 2 with no step outputs: CI saw a shipped release as failed.
"""

from __future__ import annotations

import io
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from release_images import candidate_image, dated_image, tag_digest

from bed.oci import push
from bed.registry import Registry
from gpuship.cli.main import main
from gpuship.reference import Repository
from gpuship.registry.client import RegistryClient

pytestmark = pytest.mark.integration


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A directory on a 16 KiB tmpfs with no space left."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root (the CI runs the tests as root)")
    mount = tmp_path / "full"
    mount.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(mount)], check=True)
    try:
        filler = (mount / "filler").open("wb", buffering=0)
        with filler, pytest.raises(OSError, match="No space"):
            while True:
                filler.write(b"\0" * 4096)
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def _run(args: list[str], environ: dict[str, str]) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = main(args, environ=environ, stdout=stdout, stderr=stderr)
    return code, stdout.getvalue(), stderr.getvalue()


def _actions(tmp_path: Path, summary: Path) -> dict[str, str]:
    """A GitHub Actions step's environment: outputs to a file that works, the summary to
    `summary`."""
    outputs = tmp_path / "github_output"
    outputs.touch()
    return {
        "GITHUB_ACTIONS": "true",
        "GITHUB_OUTPUT": str(outputs),
        "GITHUB_STEP_SUMMARY": str(summary),
    }


def _outputs(environ: dict[str, str]) -> dict[str, str]:
    lines = Path(environ["GITHUB_OUTPUT"]).read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line)


def test_a_shipped_promote_stays_shipped_when_its_files_cannot_be_written(
    registry: Registry, tmp_path: Path, full_disk: Path
):
    name = "files/promote"
    new = push(registry.url, name, candidate_image("files-promote"))
    environ = _actions(tmp_path, full_disk / "summary.md")
    not_a_directory = tmp_path / "a-file"
    not_a_directory.write_text("")
    args = ["--format", "json", "--output", str(full_disk / "report.json")]
    args += ["promote", f"{registry.host}/{name}@{new}", "--tag", "1.0.0", "--move", "stable"]
    args += ["--record-file", str(not_a_directory / "record.json")]
    args += ["--instructions-file", str(full_disk / "rollback.md")]
    code, stdout, stderr = _run(args, environ)
    assert code == 0, stderr
    client = RegistryClient(environ={})
    repo = Repository(registry.host, name)
    assert tag_digest(client, repo, "stable") == tag_digest(client, repo, "1.0.0") == new
    outputs = _outputs(environ)
    assert outputs["failed"] == "false" and outputs["release-id"]
    assert outputs["changed-tags"] == "stable,1.0.0"
    assert "record-file" not in outputs and "instructions-file" not in outputs
    # Every file that could not be written is named, as a warning line and an annotation.
    for path in ("report.json", "summary.md"):
        assert f"{full_disk / path}" in stderr and "No space left on device" in stderr
    assert f"::warning title=gpuship::{full_disk / 'report.json'}" in stdout
    assert str(not_a_directory / "record.json") in stdout  # the report's own warning
    assert str(full_disk / "rollback.md") in stdout
    assert not (full_disk / "report.json").exists()


def test_rollback_and_prune_keep_their_exit_code_when_the_report_cannot_be_written(
    registry: Registry, tmp_path: Path, full_disk: Path
):
    name = "files/rollback"
    repo = Repository(registry.host, name)
    old = push(
        registry.url, name, dated_image("files-old", "2026-01-01T00:00:00Z"), tag="nightly-1"
    )
    new = push(
        registry.url, name, dated_image("files-new", "2026-02-01T00:00:00Z"), tag="nightly-2"
    )
    stale = push(
        registry.url, name, dated_image("files-stale", "2025-01-01T00:00:00Z"), tag="nightly-0"
    )
    environ = _actions(tmp_path, tmp_path / "summary.md")
    for digest, version in ((old, "1.0.0"), (new, "2.0.0")):
        promote = ["promote", f"{repo}@{digest}", "--tag", version, "--move", "stable"]
        code, _, stderr = _run(promote, environ)
        assert code == 0, stderr
    report = ["--format", "json", "--output", str(full_disk / "report.json")]
    code, _, stderr = _run([*report, "rollback", f"{repo}:stable"], environ)
    assert code == 0, stderr
    assert "No space left on device" in stderr
    assert _outputs(environ)["failed"] == "false"
    client = RegistryClient(environ={})
    assert tag_digest(client, repo, "stable") == old
    config = tmp_path / "gpuship.yaml"
    config.write_text(
        "release:\n  retention:\n    keep:\n      - pattern: 'nightly-.*'\n        newest: 0\n"
    )
    prune = [*report, "--config", str(config), "prune", str(repo), "--apply"]
    (tmp_path / "github_output").write_text("")
    code, _, stderr = _run(prune, environ)
    assert code == 0, stderr
    assert "No space left on device" in stderr
    outputs = _outputs(environ)
    assert outputs["failed"] == "false" and outputs["dry-run"] == "false"
    assert outputs["selected"] == outputs["deleted"] == stale  # the others hold versions
    assert client.head_manifest(repo.at(stale)) is None
    # A refused promote still fails (exit 1), and `failed` says so.
    (tmp_path / "github_output").write_text("")
    code, _, stderr = _run([*report, "promote", f"{repo}@{new}", "--tag", "1.0.0"], environ)
    assert code == 1, stderr
    assert _outputs(environ)["failed"] == "true"
    # A command that writes nothing to a registry fails on the file, as before.
    code, _, stderr = _run([*report, "history", str(repo)], environ)
    assert code == 2 and "No space left on device" in stderr
