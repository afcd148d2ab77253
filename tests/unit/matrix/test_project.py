"""`build --image --set` picks one cell of the planned matrix, or says why it cannot."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuship.errors import ConfigError, UsageError
from gpuship.matrix.config import ImageConfig
from gpuship.matrix.project import Project, load_project, pick_cell


def project(tmp_path: Path, cuda: list[str]) -> Project:
    image = ImageConfig.model_validate(
        {"name": "s", "repository": "r.io/s", "axes": {"cuda": cuda, "torch": ["2.6.0"]}}
    )
    return load_project(tmp_path / "gpuship.yaml", [image])


def test_the_values_pick_one_valid_cell(tmp_path: Path) -> None:
    cell = pick_cell(project(tmp_path, ["12.4", "12.6"]), "s", {"cuda": "12.6"}, {})
    assert (cell["cuda"], cell["torch"], cell["id"]) == ("12.6", "2.6.0", "s-cuda12.6-torch2.6.0")


def test_several_matches_are_a_usage_error_naming_them(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"^torch=2\.6\.0 matches 2 cells \(.+, .+\); add --set"):
        pick_cell(project(tmp_path, ["12.4", "12.6"]), "s", {"torch": "2.6.0"}, {})


def test_no_valid_match_names_the_invalid_cell_and_why(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"^image s has no valid cell with cuda=11\.0 \(.+ is invalid: "
    ):
        pick_cell(project(tmp_path, ["12.6", "11.0"]), "s", {"cuda": "11.0"}, {})
    with pytest.raises(ConfigError, match=r"no valid cell with cuda=9\.9$"):
        pick_cell(project(tmp_path, ["12.6"]), "s", {"cuda": "9.9"}, {})
