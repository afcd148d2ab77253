"""Fleet grid on data: audits x images -> ok/warn/fail, drivers, exclusions, report."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from compat_builders import A100, H100, H200, RTX4090, T4, audit, gpu, image
from require_values import IMAGES

from gpuship.cli.main import main
from gpuship.compat.cell import cell_needs, matrix_cells
from gpuship.compat.checks.base import Status
from gpuship.compat.config import VerifyConfig
from gpuship.compat.fleet import build_fleet
from gpuship.compat.needs import ImageGpuNeeds, image_needs
from gpuship.errors import InputError
from gpuship.report.result import to_json
from gpuship.verify.report import fleet_report
from json_results import checked

FLEET = [
    audit(470, [gpu(**T4)], labels=["gpu-t4"]),
    audit(535, [gpu(**A100)], labels=["gpu-a100"]),
    audit(550, [gpu(**RTX4090)], labels=["gpu-4090"]),
    audit(580, [gpu(**H200)], labels=["gpu-h200"]),
]


def named(key: str) -> ImageGpuNeeds:
    return image_needs(f"cuda:{key}", IMAGES[key], {})


def test_grid_statuses_follow_the_verdict() -> None:
    fleet = build_fleet(FLEET, [named("12.4.1"), named("13.0")], VerifyConfig())
    assert fleet.runners == ("gpu-t4", "gpu-a100", "gpu-4090", "gpu-h200")
    statuses = {(c.image, c.runner): c.verdict.status for c in fleet.cells}
    assert statuses[("cuda:12.4.1", "gpu-t4")] is Status.OK  # forward compat (note)
    assert statuses[("cuda:12.4.1", "gpu-a100")] is Status.WARN  # minor-version compat
    assert statuses[("cuda:13.0", "gpu-4090")] is Status.FAIL  # GeForce, older major
    assert statuses[("cuda:13.0", "gpu-h200")] is Status.OK
    assert fleet.exclusions()["cuda:13.0"] == ("gpu-t4", "gpu-4090")
    assert fleet.unrunnable_images == ()
    assert fleet.oldest_driver == "470.256.02"
    assert fleet.driver_for_all_images is not None
    assert fleet.driver_for_all_images.startswith("580.")  # the 13.0 row


def test_image_no_runner_can_run_fails_the_report() -> None:
    hopper_only = image(labels={"io.gpuship.cuda": "12.4", "io.gpuship.arch-list": "9.0"})
    fleet = build_fleet(FLEET[:3], [hopper_only], VerifyConfig())
    assert fleet.unrunnable_images == ("registry.example/app:1",)
    assert set(fleet.useless_runners) == {"gpu-t4", "gpu-a100", "gpu-4090"}
    report = fleet_report(fleet)
    assert report.failed
    assert any(f.rule == "GSV401" for f in report.findings)
    assert to_json(report.result)["unrunnable_images"] == ["registry.example/app:1"]
    grid = report.tables[0]
    assert grid.headers == ("image", "gpu-t4", "gpu-a100", "gpu-4090")
    assert all(cell.startswith("FAIL: ") for cell in grid.rows[0][1:])


def test_report_lists_exclusions_and_runnable_runners() -> None:
    report = fleet_report(build_fleet(FLEET, [named("13.0")], VerifyConfig()))
    assert not report.failed
    assert to_json(report.result)["exclude"] == {"cuda:13.0": ["gpu-t4", "gpu-4090"]}
    assert to_json(report.result)["runnable_on"] == {"cuda:13.0": ["gpu-a100", "gpu-h200"]}
    warnings = [f for f in report.findings if f.rule == "GSV402"]
    assert {f.fix for f in warnings} == {
        "exclude runner label gpu-t4 for cuda:13.0",
        "exclude runner label gpu-4090 for cuda:13.0",
    }


def test_matrix_cells_become_images() -> None:
    matrix = {
        "include": [
            {
                "id": "train-cuda12.8",
                "image": "train",
                "repository": "r/train",
                "cuda": "12.8",
                "min_driver": "570.26",
                "arch_list": "8.0;9.0",
                "labels": {"io.gpuship.cell": "train-cuda12.8-a"},
            },
            {"id": "infer", "image": "infer", "repository": "r/infer", "cuda": "12.4",
             "arch_list": "8.0;8.9"},
        ]
    }  # fmt: skip
    needs = [cell_needs(cell) for cell in matrix_cells(matrix, "matrix.json")]
    assert [n.reference for n in needs] == ["train-cuda12.8-a", "infer"]
    assert needs[0].min_driver == "570.26"
    assert needs[1].arch_targets is not None
    fleet = build_fleet([audit(570, [gpu(**H100)], labels=["h100"])], needs, VerifyConfig())
    assert fleet.driver_for_all_images == "570.26"


def test_duplicate_runner_names_are_told_apart_by_hostname() -> None:
    fleet = build_fleet([FLEET[1], FLEET[1]], [named("12.4.1")], VerifyConfig())
    assert fleet.runners == ("gpu-a100 (gpu-host)", "gpu-a100 (gpu-host)")


@pytest.mark.parametrize(
    ("matrix", "message"),
    [({"cells": []}, "no 'include' list"), ({"include": ["x"]}, r"include\[0\]")],
)
def test_bad_matrix_is_an_input_error(matrix: dict[str, object], message: str) -> None:
    with pytest.raises(InputError, match=message):
        matrix_cells(matrix, "matrix.json")


def test_empty_inputs_are_input_errors() -> None:
    with pytest.raises(InputError, match="audit"):
        build_fleet([], [named("13.0")], VerifyConfig())
    with pytest.raises(InputError, match="--image"):
        build_fleet(FLEET, [], VerifyConfig())


def test_audit_directories_are_searched_recursively(tmp_path: Path) -> None:
    from gpuship.cli.commands.fleet import audit_paths
    from gpuship.errors import InputError

    (tmp_path / "audits" / "audit-a100").mkdir(parents=True)
    (tmp_path / "audits" / "audit-l4").mkdir()
    a100 = tmp_path / "audits" / "audit-a100" / "gpuship-audit.json"
    l4 = tmp_path / "audits" / "audit-l4" / "gpuship-audit.json"
    for path in (a100, l4):
        path.write_text("{}")
    (tmp_path / "audits" / "notes.txt").write_text("not an audit")
    single = tmp_path / "one.json"
    assert audit_paths([str(tmp_path / "audits"), str(single)]) == [a100, l4, single]
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no audit"):
        audit_paths([str(tmp_path / "empty")])


def test_rules_config_lowers_the_fleet_verdict(tmp_path: Path) -> None:
    # gpuship fleet through the CLI: an image only Hopper can run, on a fleet without one.
    paths = []
    for number, runner in enumerate(FLEET[:3]):
        path = tmp_path / f"audit{number}.json"
        path.write_text(runner.model_dump_json())
        paths.append(str(path))
    matrix = tmp_path / "matrix.json"
    cell = {"id": "h", "image": "h", "repository": "r/h", "cuda": "12.4", "arch_list": "9.0"}
    matrix.write_text(json.dumps({"include": [cell]}))
    config = tmp_path / "gpuship.yaml"

    def fleet(rules: str) -> tuple[int, dict[str, Any]]:
        config.write_text(rules or "version: 1\n")
        out, err = io.StringIO(), io.StringIO()
        argv = ["--config", str(config), "fleet", *paths, "--matrix", str(matrix)]
        code = main([*argv, "--format", "json"], {}, out, err)
        return code, checked(out.getvalue())

    code, document = fleet("")
    assert code == 1 and document["failed"] is True
    assert {f["rule"]: f["severity"] for f in document["findings"]} == {"GSV401": "error"}
    code, document = fleet("rules: {verify-fleet-unplaceable: warning}\n")
    assert code == 0 and document["failed"] is False
    assert {f["rule"]: f["severity"] for f in document["findings"]} == {"GSV401": "warning"}
    assert document["result"]["unrunnable_images"] == ["h"]  # what it found stays
