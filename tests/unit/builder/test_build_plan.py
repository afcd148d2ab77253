"""What `gpuship build` derives from a cell before any builder runs (pure)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from gpuship import labels as L
from gpuship.builder.plan import BuildPlan
from gpuship.cli.main import main
from gpuship.compat.cell import cell_from_dict, parse_cell
from gpuship.errors import InputError
from gpuship.matrix.cells import plan_image
from gpuship.matrix.config import ImageConfig

COMMIT = "89abcdef" * 5


def planned_cell() -> dict[str, object]:
    image = ImageConfig.model_validate(
        {
            "name": "serve",
            "role": "inference",
            "repository": "127.0.0.1:5000/acme/serve",
            "axes": {"cuda": ["12.6"]},
            "tags": ["cu{cuda|nodot}"],
        }
    )
    return plan_image(image, (), {}).cells[0].to_json()


def plan(tmp_path: Path, commit: str | None = COMMIT) -> BuildPlan:
    return BuildPlan(
        cell=cell_from_dict(planned_cell()),
        directory=tmp_path,
        commit=commit,
        created="2026-01-02T03:04:05Z",
        push=True,
        builder="engine",
        network=None,
        image_checks=False,
    )


def test_matrix_cells_are_valid_build_input() -> None:
    cell = parse_cell(json.dumps(planned_cell()))
    assert cell.id == "serve-cuda12.6"
    assert cell.labels[L.LABEL_ROLE] == "inference"


def test_candidate_tag_comes_first_then_cell_tags(tmp_path: Path) -> None:
    tags = plan(tmp_path).tags()
    assert tags == (
        f"127.0.0.1:5000/acme/serve:sha-{COMMIT[:7]}-serve-cuda12.6",
        "127.0.0.1:5000/acme/serve:cu126",
    )


def test_build_labels_add_time_and_revision(tmp_path: Path) -> None:
    labels = plan(tmp_path).labels()
    assert labels[L.OCI_CREATED] == "2026-01-02T03:04:05Z"
    assert labels[L.OCI_REVISION] == COMMIT
    assert labels[L.LABEL_CUDA] == "12.6"


def test_missing_dockerfile_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="Dockerfile Dockerfile does not exist"):
        plan(tmp_path).request()
    (tmp_path / "Dockerfile").write_text("FROM scratch\n")
    request = plan(tmp_path).request()
    assert request.dockerfile == (tmp_path / "Dockerfile").resolve()
    assert request.platform == "linux/amd64"


@pytest.mark.parametrize(
    ("cell", "message"),
    [
        ("{not json", "--cell: not JSON"),
        ('{"id": "Bad Id", "image": "x", "repository": "r"}', "--cell: id:"),
        ('{"image": "x", "repository": "r"}', "--cell: id: Field required"),
        (
            '{"id": "x", "image": "x", "repository": "r", "labels": {"io.gpuship.cuda": "12.x"}}',
            "--cell: cell x: label io.gpuship.cuda='12.x': invalid CUDA version '12.x'",
        ),
    ],
)
def test_bad_cell_json_is_one_clear_line(cell: str, message: str) -> None:
    err = io.StringIO()
    code = main(["build", "--cell", cell, "--no-push"], {}, io.StringIO(), err)
    assert code == 2
    assert message in err.getvalue()
    assert len(err.getvalue().strip().splitlines()) == 1


def test_set_must_pick_exactly_one_cell(tmp_path: Path) -> None:
    config = tmp_path / "gpuship.yaml"
    config.write_text(
        "images:\n  - name: s\n    repository: r.io/s\n"
        "    axes: {cuda: ['12.4', '12.6'], torch: ['2.6.0']}\n"
    )
    err = io.StringIO()
    code = main(["--config", str(config), "build", "--image", "s"], {}, io.StringIO(), err)
    assert code == 2 and "matches 2 cells" in err.getvalue()
    err = io.StringIO()
    args = ["--config", str(config), "build", "--image", "s", "--set", "cuda=11.8"]
    assert main(args, {}, io.StringIO(), err) == 2
    assert "no valid cell with cuda=11.8" in err.getvalue()


def test_push_needs_a_commit(tmp_path: Path) -> None:
    err = io.StringIO()
    cell = json.dumps(planned_cell())
    # No GITHUB_SHA and a directory that is not a git checkout: no commit to tag with.
    config = tmp_path / "gpuship.yaml"
    config.write_text("{}\n")
    code = main(["--config", str(config), "build", "--cell", cell], {}, io.StringIO(), err)
    assert code == 2 and "no commit for the candidate tag" in err.getvalue()
