"""Through act: a `matrix` job feeds `fromJSON(needs.matrix.outputs.matrix)` to `build` jobs."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sample_bed import SampleProject

from bed.act import ActRunner
from gpuship.reference import parse_reference
from gpuship.registry.client import RegistryClient

pytestmark = pytest.mark.integration

WORKFLOW = """\
name: build
on: push
jobs:
  matrix:
    runs-on: ubuntu-latest
    outputs:
      matrix: ${{ steps.matrix.outputs.matrix }}
    steps:
      - uses: actions/checkout@v4
      - id: matrix
        uses: gpuship/gpuship/actions/matrix@v1
        with:
          python-versions: "3.12"
  build:
    needs: matrix
    runs-on: ubuntu-latest
    strategy:
      matrix: ${{ fromJSON(needs.matrix.outputs.matrix) }}
    steps:
      - uses: actions/checkout@v4
      - id: build
        uses: gpuship/gpuship/actions/build@v1
        with:
          cell: ${{ toJSON(matrix) }}
          network: none
          image-checks: "false"
      - env:
          DIGEST: ${{ steps.build.outputs.digest }}
          IMAGE: ${{ steps.build.outputs.image }}
          CELL: ${{ matrix.id }}
        run: |
          test -n "$DIGEST"
          echo "built $CELL as $IMAGE"
"""


def test_matrix_job_feeds_build_jobs(
    act: ActRunner, sample_project: Callable[[str], SampleProject]
) -> None:
    project = sample_project("actflow")
    assert project.gpuship("lock").code == 0
    # The workflow narrows python to one version: two cells, one per CUDA branch.
    cells = [cell for cell in project.matrix() if cell["python"] == "3.12"]
    assert len(cells) == 2
    files = {
        str(path.relative_to(project.directory)): path.read_text()
        for path in sorted(project.directory.rglob("*"))
        if path.is_file() and not path.name.startswith(".outputs")
    }
    result = act(
        WORKFLOW,
        "push",
        files=files,
        env={k: v for k, v in project.env.items() if k.startswith("DOCKER_")},
        timeout=900,
    )
    assert result.succeeded, result.log[-4000:]
    assert "-python3.11" not in result.log  # no cell of the narrowed-out python was built
    with RegistryClient() as client:
        for cell in cells:
            assert f"built {cell['id']} as {cell['repository']}@sha256:" in result.log
            tags = client.list_tags(parse_reference(str(cell["repository"])).repository)
            assert any(tag.startswith("sha-") and tag.endswith(f"-{cell['id']}") for tag in tags)
