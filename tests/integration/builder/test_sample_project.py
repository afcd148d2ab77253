"""The sample project against a real engine and registry: lock, matrix, build, push, labels."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sample_bed import SampleProject, push_base

from gpuship import labels as L
from gpuship.cuda.arch import parse_arch_list
from gpuship.cuda.drivers import min_driver_for
from gpuship.matrix.lockfile import read_lock
from gpuship.reference import parse_reference
from gpuship.registry.client import RegistryClient
from gpuship.registry.manifest import ImageManifest, parse_manifest

pytestmark = pytest.mark.integration

COMMIT7 = "0123456"


def registry_labels(image: str) -> dict[str, str]:
    """The Labels of an image's config, read from the registry (no pull)."""
    reference = parse_reference(image)
    with RegistryClient() as client:
        data, media_type, _ = client.get_manifest(reference)
        manifest = parse_manifest(data, media_type)
        assert isinstance(manifest, ImageManifest)
        with client.open_blob(reference.repository, manifest.config.digest) as blob:
            config: dict[str, Any] = json.loads(blob.read())
    labels: dict[str, str] = config["config"]["Labels"]
    return labels


def build(project: SampleProject, cell: dict[str, Any], *extra: str) -> Any:
    return project.gpuship(
        "build", "--cell", json.dumps(cell), "--network", "none", "--no-image-checks", *extra
    )


def test_lock_pins_bases_and_check_sees_drift(
    sample_project: Callable[[str], SampleProject],
) -> None:
    project = sample_project("lockdrift")
    first = project.gpuship("lock")
    assert first.code == 0, first.stderr
    lock = read_lock(project.directory / "gpuship.lock")
    assert lock is not None and len(lock.bases) == 2
    with RegistryClient() as client:
        for reference, digest in lock.bases.items():
            assert client.resolve_digest(parse_reference(reference)) == digest
    text = (project.directory / "gpuship.lock").read_text()
    assert project.gpuship("lock").code == 0
    assert (project.directory / "gpuship.lock").read_text() == text  # deterministic
    assert project.gpuship("lock", "--check").code == 0
    moved = sorted(lock.bases)[0]
    push_base(project.registry, moved, "12.9")  # same tag, new content
    stale = project.gpuship("lock", "--check")
    assert stale.code == 1
    assert f"{moved} moved from" in stale.stdout
    assert (project.directory / "gpuship.lock").read_text() == text  # --check writes nothing
    # As JSON (checked against `gpuship schema --result lock` by the runner): what changed.
    document = json.loads(project.gpuship("lock", "--check", "--format", "json").stdout)
    assert document["failed"] is True
    assert [c for c in document["result"]["changes"] if c.startswith(f"{moved} moved from")]


def test_every_cell_builds_pushes_and_carries_kb_labels(
    sample_project: Callable[[str], SampleProject],
) -> None:
    project = sample_project("allcells")
    assert project.gpuship("lock").code == 0
    cells = project.matrix()
    assert len(cells) == 4
    for cell in cells:
        result = build(project, cell)
        assert result.code == 0, result.stderr + result.stdout
        digest = result.outputs["digest"]
        assert result.outputs["image"] == f"{cell['repository']}@{digest}"
        tags = result.outputs["tags"].splitlines()
        assert tags[0] == f"{cell['repository']}:sha-{COMMIT7}-{cell['id']}"
        assert set(cell["tags"]) <= set(tags)  # type: ignore[arg-type]
        metadata = json.loads(result.outputs["metadata"])
        assert metadata["digest"] == digest
        with RegistryClient() as client:
            for tag in tags:
                assert client.resolve_digest(parse_reference(tag)) == digest
        labels = registry_labels(result.outputs["image"])
        cuda = str(cell["cuda"])
        assert labels[L.LABEL_CUDA] == cuda
        assert labels[L.LABEL_MIN_DRIVER] == str(min_driver_for(cuda))
        assert parse_arch_list(labels[L.LABEL_ARCH_LIST]) == parse_arch_list(["sm_80", "sm_90"])
        assert labels[L.LABEL_ROLE] == "inference"
        assert labels[L.LABEL_CELL] == cell["id"]
        assert labels[L.OCI_REVISION] == project.env["GITHUB_SHA"]
        assert labels[L.OCI_SOURCE] == f"https://github.com/{project.env['GITHUB_REPOSITORY']}"
        assert labels[L.OCI_BASE_DIGEST] == str(cell["base_image"]).rsplit("@", 1)[1]
        assert labels == {
            **cell["labels"],
            **{k: labels[k] for k in (L.OCI_CREATED, L.OCI_REVISION)},
        }  # type: ignore[dict-item]


def test_code_only_change_reuses_dependency_layers(
    sample_project: Callable[[str], SampleProject],
) -> None:
    project = sample_project("warm")
    assert project.gpuship("lock").code == 0
    cell = project.matrix()[0]
    cold = build(project, cell)
    assert cold.code == 0, cold.stderr
    app = project.directory / "app" / "serve.py"
    app.write_text(app.read_text() + "\n# a code-only change\n")
    warm = build(project, cell)
    assert warm.code == 0, warm.stderr
    steps = _steps(warm.stderr)
    dependency_steps = [s for s in steps if "requirements.txt" in s[0] or "vendor/" in s[0]]
    assert dependency_steps and all(cached for _, cached in dependency_steps)
    (app_step,) = [s for s in steps if s[0].startswith("COPY app/")]
    assert not app_step[1]  # the code layer is rebuilt
    assert warm.outputs["digest"] != cold.outputs["digest"]


def _steps(stderr: str) -> list[tuple[str, bool]]:
    """(instruction, came from cache) for each classic-builder step in the progress lines."""
    steps: list[tuple[str, bool]] = []
    for line in stderr.splitlines():
        text = line.split("] ", 1)[-1]
        if text.startswith("Step "):
            steps.append((text.split(" : ", 1)[1], False))
        elif text.startswith("---> Using cache") and steps:
            steps[-1] = (steps[-1][0], True)
    return steps


def test_build_failure_is_annotated_on_the_dockerfile_line(
    sample_project: Callable[[str], SampleProject],
) -> None:
    project = sample_project("broken")
    assert project.gpuship("lock").code == 0
    dockerfile = project.directory / "Dockerfile"
    lines = dockerfile.read_text().splitlines()
    broken_line = lines.index("COPY app/ /opt/app/") + 1
    lines[broken_line - 1] = "COPY no-such-dir/ /opt/app/"
    dockerfile.write_text("\n".join(lines) + "\n")
    result = build(project, project.matrix()[0], "--format", "json")
    assert result.code == 1
    report = json.loads(result.stdout)
    (finding,) = report["findings"]
    assert finding["rule"] == "GSB301"
    assert finding["line"] == broken_line
    assert finding["file"].endswith("Dockerfile")
    assert "no-such-dir" in finding["message"]
    assert "digest" not in result.outputs


def test_refused_push_is_an_error_with_no_digest(
    sample_project: Callable[[str], SampleProject], registry_basic_auth: Any, tmp_path: Path
) -> None:
    project = sample_project("refused")
    assert project.gpuship("lock").code == 0
    cell = project.matrix()[0]
    target = f"{registry_basic_auth.host}/refused/app"
    cell = {**cell, "repository": target, "tags": [f"{target}:extra"]}
    # No credentials, whatever another test stored in the shared engine's client config.
    result = project.gpuship(
        "build", "--cell", json.dumps(cell), "--network", "none", "--no-image-checks",
        "--format", "json", extra_env={"DOCKER_CONFIG": str(tmp_path)},
    )  # fmt: skip
    assert result.code == 1, result.stderr
    report = json.loads(result.stdout)
    (finding,) = report["findings"]
    assert finding["rule"] == "GSB302"
    assert f"{target}:sha-{COMMIT7}-{cell['id']}" in finding["message"]
    assert "not pushed" in finding["message"]
    assert result.outputs.get("digest") in (None, "")
    assert report["failed"] is True


def test_image_checks_run_on_the_pushed_image(
    sample_project: Callable[[str], SampleProject],
) -> None:
    project = sample_project("checked")
    assert project.gpuship("lock").code == 0
    cell = project.matrix()[0]
    result = project.gpuship(
        "build", "--cell", json.dumps(cell), "--network", "none", "--format", "json"
    )
    report = json.loads(result.stdout)
    assert "image_checks" in report["result"], result.stderr
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    assert result.code == (1 if errors else 0), report["findings"]
    # The OCI labels gpuship writes satisfy the image stage's metadata checks.
    assert not [f for f in report["findings"] if "org.opencontainers" in f["message"]]
    assert report["result"]["digest"] == result.outputs["digest"]


def test_unreachable_registry_is_an_environment_error(
    sample_project: Callable[[str], SampleProject],
) -> None:
    project = sample_project("unreachable")
    assert project.gpuship("lock").code == 0
    cell = project.matrix()[0]
    # Port 9 (discard) on loopback: nothing listens, the connection is refused.
    cell = {**cell, "repository": "127.0.0.1:9/unreachable/app", "tags": []}
    result = build(project, cell)
    assert result.code == 3, result.stderr
    assert "cannot push 127.0.0.1:9/unreachable/app:sha-" in result.stderr
    assert result.stderr.count("gpuship: error:") == 1
    assert result.outputs.get("digest") in (None, "")


def test_lock_names_a_base_tag_the_registry_does_not_have(
    sample_project: Callable[[str], SampleProject],
) -> None:
    project = sample_project("missingbase")
    config = project.directory / "gpuship.yaml"
    config.write_text(config.read_text().replace("{cuda}-runtime", "{cuda}-nope"))
    result = project.gpuship("lock")
    assert result.code == 2
    assert "cuda-base:12.4-nope" in result.stderr or "cuda-base:12.6-nope" in result.stderr
    assert not (project.directory / "gpuship.lock").exists()  # nothing half-written
    matrix = project.gpuship("matrix")
    assert matrix.code == 2 and "is not in gpuship.lock" in matrix.stderr


FAILING_TOOL = r"""
#include <stdio.h>
int main(void) {
    fprintf(stderr, "Collecting torch==9.9\n");
    fprintf(stderr, "ERROR: No matching distribution found for torch==9.9\n");
    return 1;
}
"""


def test_failing_run_step_reports_its_own_output_on_its_line(
    sample_project: Callable[[str], SampleProject], tmp_path: Any
) -> None:
    import subprocess

    from bed.process import require_binary

    gcc = require_binary("gcc")
    project = sample_project("runfails")
    assert project.gpuship("lock").code == 0
    source = tmp_path / "fail.c"
    source.write_text(FAILING_TOOL)
    (project.directory / "tools").mkdir()
    # Static, so it runs in an image without a libc (the stand-in base has none).
    subprocess.run(
        [gcc, "-static", "-o", str(project.directory / "tools" / "fail"), str(source)], check=True
    )
    dockerfile = project.directory / "Dockerfile"
    lines = dockerfile.read_text().splitlines()
    at = lines.index("COPY app/ /opt/app/") + 1
    lines[at:at] = ["COPY tools/fail /usr/local/bin/fail", 'RUN ["/usr/local/bin/fail"]']
    dockerfile.write_text("\n".join(lines) + "\n")
    result = build(project, project.matrix()[0], "--format", "json")
    assert result.code == 1, result.stderr
    (finding,) = json.loads(result.stdout)["findings"]
    assert finding["rule"] == "GSB301"
    assert finding["line"] == at + 2
    assert "returned a non-zero code: 1" in finding["message"]
    assert "No matching distribution found for torch==9.9" in finding["message"]
