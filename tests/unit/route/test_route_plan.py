"""`gpuship fleet plan` through the CLI: the image x pool grid before and after, images that lose
every host, driver branches that drop GPUs, the rollout, and bad flags as one line (exit 2).
The JSON output is validated against the schema `gpuship schema --result fleet` publishes."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from gpuship.cli.main import main
from json_results import checked
from unit.compat.compat_builders import A100, T4, audit, gpu

V100 = {"name": "Tesla V100-SXM2-32GB", "brand": "Nvidia", "cc": "7.0", "memory_gib": 32}


def _fleet(tmp_path: Path) -> Path:
    folder = tmp_path / "audits"
    folder.mkdir()
    hosts = [
        ("a100-1", 550, A100, "gpu-a100-550"),
        ("a100-2", 550, A100, "gpu-a100-550"),
        ("t4-1", 535, T4, "gpu-t4-535"),
        ("v100-1", 580, V100, "gpu-v100-580"),
    ]
    for name, branch, model, label in hosts:
        host = audit(branch, [gpu(**model)], labels=[label])  # type: ignore[arg-type]
        runner = host.runner.model_copy(update={"hostname": name, "runner_name": name})
        (folder / f"{name}.json").write_text(
            host.model_copy(update={"runner": runner}).model_dump_json()
        )
    return folder


def _matrix(tmp_path: Path, *cells: tuple[str, str, str]) -> Path:
    path = tmp_path / "matrix.json"
    include = [
        {
            "id": cell_id,
            "image": "app",
            "repository": "registry.example/app",
            "tags": [f"registry.example/app:{cell_id}"],
            "cuda": cuda,
            "arch_list": arch,
        }
        for cell_id, cuda, arch in cells
    ]
    path.write_text(json.dumps({"include": include}))
    return path


def _plan(tmp_path: Path, matrix: Path, *flags: str) -> tuple[int, dict[str, Any], str]:
    out, err = io.StringIO(), io.StringIO()
    argv = ["fleet", "plan", str(_fleet(tmp_path)), "--matrix", str(matrix), *flags]
    code = main([*argv, "--format", "json"], {}, out, err)
    document = checked(out.getvalue()) if out.getvalue().startswith("{") else {}
    return code, document, err.getvalue()


def _cell(document: dict[str, Any], image: str, pool: str) -> tuple[str, str]:
    [cell] = [c for c in document["result"]["cells"] if (c["image"], c["pool"]) == (image, pool)]
    return cell["before"], cell["after"]


def test_a_driver_upgrade_shows_each_image_and_pool_before_and_after(tmp_path: Path) -> None:
    matrix = _matrix(tmp_path, ("cu128", "12.8", "7.5;8.0"))
    code, document, _ = _plan(tmp_path, matrix, "--driver", "gpu-a100-550=570.195.03")
    assert code == 0
    assert _cell(document, "cu128", "gpu-a100-550") == ("warn", "ok")  # minor-version compat
    assert _cell(document, "cu128", "gpu-t4-535") == ("warn", "warn")  # unchanged pool
    result = document["result"]
    assert result["images_losing_every_host"] == []
    assert result["lowest_driver_running_everything"] == "570.26"
    steps = [(s["action"], s["hosts"]) for s in result["rollout"]]
    assert steps == [
        (
            "upgrade the pilot host of pool gpu-a100-550 to driver 570.195.03, and rename its "
            "label gpu-a100-550 to gpu-a100-570",
            ["a100-1"],
        ),
        ("upgrade the other 1 host(s) of pool gpu-a100-550 to driver 570.195.03", ["a100-2"]),
    ]
    assert "gpuship fleet pilot.json --matrix" in result["rollout"][0]["check"]


def test_retiring_the_only_gpus_an_image_runs_on_loses_it(tmp_path: Path) -> None:
    # sm_75 only: runs on the T4s alone
    matrix = _matrix(tmp_path, ("t4only", "12.2", "7.5"), ("wide", "12.2", "7.0;7.5;8.0"))
    code, document, _ = _plan(tmp_path, matrix, "--retire", "T4")
    assert code == 1
    assert document["result"]["images_losing_every_host"] == ["t4only"]
    [finding] = document["findings"]
    assert finding["rule"] == "GSQ301"
    assert finding["message"] == "t4only runs on no pool after the change (retire T4)"
    assert _cell(document, "wide", "gpu-t4-535") == ("ok", "unknown")
    assert document["result"]["rollout"][0]["hosts"] == ["t4-1"]


def test_a_driver_branch_that_drops_a_generation_is_an_error_with_its_source(
    tmp_path: Path,
) -> None:
    matrix = _matrix(tmp_path, ("cu122", "12.2", "7.0;8.0"))
    code, document, _ = _plan(tmp_path, matrix, "--driver", "gpu-v100-580=590.44.01")
    assert code == 1
    [dropped] = document["result"]["dropped_generations"]
    assert (dropped["generation"], dropped["hosts"]) == ("Volta", ["v100-1"])
    assert "unix-graphics-feature-deprecation-schedule" in dropped["source"]
    assert [f["rule"] for f in document["findings"]] == ["GSQ302"]


def test_a_cuda_variant_loses_the_gpus_its_nvcc_no_longer_compiles(tmp_path: Path) -> None:
    matrix = _matrix(tmp_path, ("cu128", "12.8", "7.0;7.5;8.0"))
    code, document, _ = _plan(tmp_path, matrix, "--cuda", "13.0")
    assert code == 0  # the released image keeps its hosts
    assert _cell(document, "cu128+cuda13.0", "gpu-v100-580") == ("absent", "fail")
    [variant] = [
        c
        for c in document["result"]["cells"]
        if c["image"] == "cu128+cuda13.0" and c["pool"] == "gpu-v100-580"
    ]
    assert "sm_70 has neither SASS nor PTX" in variant["after_why"]
    assert document["result"]["lowest_driver_running_everything"] == "580.65.06"
    # the variant needs a driver no host has yet: it is built after the driver steps (none)
    assert [s["action"] for s in document["result"]["rollout"]] == ["build the CUDA 13.0 variants"]


def test_markdown_for_the_job_summary(tmp_path: Path) -> None:
    matrix = _matrix(tmp_path, ("cu124", "12.4", "8.0"))
    out = io.StringIO()
    argv = ["fleet", "plan", str(_fleet(tmp_path)), "--matrix", str(matrix), "--retire", "a100-1"]
    assert main([*argv, "--format", "markdown"], {}, out, io.StringIO()) == 0
    text = out.getvalue()
    assert "| image | pool | before | after | why |" in text
    assert "| cu124 | gpu-a100-550 | ok | ok |" in text


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--driver", "gpu-a100-550"], "--driver 'gpu-a100-550': expected POOL=VERSION"),
        (["--driver", "gpu-x=580.65.06"], "no host carries label gpu-x (unknown pool)"),
        (["--driver", "gpu-a100-550=latest"], "invalid driver version 'latest'"),
        (["--cuda", "14.9"], "--cuda 14.9: unknown cuda '14.9'"),
        (["--retire", "B200"], "--retire B200: names no host and no GPU of the fleet"),
        ([], "fleet plan: give a change"),
    ],
)
def test_bad_flags_are_one_line_and_exit_2(tmp_path: Path, flags: list[str], message: str) -> None:
    code, document, err = _plan(tmp_path, _matrix(tmp_path, ("c", "12.4", "8.0")), *flags)
    assert code == 2
    assert document == {}
    [line] = err.strip().splitlines()
    assert message in line


def test_plan_flags_without_plan_are_a_usage_error(tmp_path: Path) -> None:
    err = io.StringIO()
    argv = ["fleet", str(_fleet(tmp_path)), "--image", "x:1", "--retire", "T4"]
    assert main(argv, {}, io.StringIO(), err) == 2
    assert "gpuship fleet plan AUDIT" in err.getvalue()
