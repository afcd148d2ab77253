"""`verify.driver-floor` read by `gpuship matrix`: a cell above every floor is an error naming
the cell, the driver it needs and the floor; a bad floor is one line naming the field."""

from __future__ import annotations

import io
import json
from pathlib import Path

from gpuship.cli.main import main

CONFIG = """\
images:
  - name: serve
    repository: 127.0.0.1:5000/acme/serve
    axes:
      cuda: ["12.8", "13.0"]
    tags: ["cu{cuda|nodot}"]
verify:
  driver-floor:
{floor}
"""


def _matrix(tmp_path: Path, floor: str) -> tuple[int, str, str]:
    config = tmp_path / "gpuship.yaml"
    config.write_text(CONFIG.replace("{floor}", floor))
    out, err = io.StringIO(), io.StringIO()
    code = main(["--config", str(config), "matrix", "--format", "json"], {}, out, err)
    return code, out.getvalue(), err.getvalue()


def _findings(out: str) -> list[dict[str, str]]:
    findings: list[dict[str, str]] = json.loads(out[: out.rindex("}") + 1])["findings"]
    return findings


def test_a_cell_above_every_floor_is_an_error_naming_cell_driver_and_floor(
    tmp_path: Path,
) -> None:
    code, out, _ = _matrix(tmp_path, '    default: "570.86.10"')
    assert code == 1
    [finding] = _findings(out)
    assert finding["rule"] == "GSB104"
    assert finding["severity"] == "error"
    assert finding["message"] == (
        "cell serve-cuda13.0 needs driver 580.65.06, above the driver floor 570.86.10 of the "
        "fleet (the highest floor)"
    )


def test_a_pool_whose_floor_keeps_the_driver_lets_the_cell_through(tmp_path: Path) -> None:
    floor = '    default: "570.86.10"\n    pools: {gpu-h100: "580.65.06"}'
    code, out, _ = _matrix(tmp_path, floor)
    assert code == 0
    assert _findings(out) == []


def test_without_a_floor_nothing_is_judged(tmp_path: Path) -> None:
    code, out, _ = _matrix(tmp_path, "    pools: {}")
    assert code == 0
    assert _findings(out) == []


def test_a_floor_that_is_no_driver_version_names_the_field(tmp_path: Path) -> None:
    code, _, err = _matrix(tmp_path, '    pools: {gpu-a100: "latest"}')
    assert code == 2
    [line] = err.strip().splitlines()
    assert "verify.driver-floor.pools" in line
    assert "pool gpu-a100: invalid driver version 'latest'" in line


def test_the_fleet_floor_is_stamped_into_every_cells_labels(tmp_path: Path) -> None:
    floor = '    default: "570.86.10"\n    pools: {gpu-h100: "580.65.06"}'
    code, out, _ = _matrix(tmp_path, floor)
    assert code == 0
    cells = json.loads(out[: out.rindex("}") + 1])["result"]["include"]
    assert {c["labels"]["io.gpuship.driver-floor"] for c in cells} == {"570.86.10"}


def test_without_a_fleet_floor_no_floor_label_is_written(tmp_path: Path) -> None:
    code, out, _ = _matrix(tmp_path, '    pools: {gpu-h100: "580.65.06"}')
    assert code == 0
    cells = json.loads(out[: out.rindex("}") + 1])["result"]["include"]
    assert all("io.gpuship.driver-floor" not in c["labels"] for c in cells)
