"""`gpuship matrix` end to end through the CLI boundary (pure: no services)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from gpuship.cli.main import main
from gpuship.cuda.gpus import gpu_compute_capability
from json_results import check_output

CONFIG = """\
images:
  - name: train
    role: training
    repository: 127.0.0.1:5000/acme/train
    axes:
      cuda: ["12.4", "12.6"]
      python: ["3.11", "3.12"]
    exclude:
      - {cuda: "12.4", python: "3.12"}
    include:
      - {cuda: "12.6", torch: "2.6.0"}
      - {cuda: "12.4", torch: "2.7.0"}
    tags: ["cu{cuda|nodot}-py{python}"]
"""


def run(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    config = tmp_path / "gpuship.yaml"
    if not config.exists():
        config.write_text(CONFIG)
    out, err = io.StringIO(), io.StringIO()
    code = main(["--config", str(config), *args], env or {}, out, err)
    check_output(args, out.getvalue())
    return code, out.getvalue(), err.getvalue()


def test_invalid_cell_fails_with_its_name_and_reason(tmp_path: Path) -> None:
    code, _, err = run(tmp_path, "matrix")
    assert code == 2
    assert "matrix cell train-cuda12.4-python3.11: torch 2.7.0 publishes no CUDA 12.4" in err
    assert len(err.strip().splitlines()) == 1


def test_drop_invalid_prints_the_matrix_and_sets_the_output(tmp_path: Path) -> None:
    outputs = tmp_path / "outputs"
    outputs.touch()
    env = {"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": str(outputs)}
    code, out, _ = run(tmp_path, "matrix", "--drop-invalid", "--format", "json", env=env)
    assert code == 0
    document = json.loads(out[: out.rindex("}") + 1])
    cells = document["result"]["include"]
    assert [c["id"] for c in cells] == ["train-cuda12.6-python3.11", "train-cuda12.6-python3.12"]
    assert all(c["torch"] == "2.6.0" for c in cells)
    written = outputs.read_text()
    line = next(item for item in written.splitlines() if item.startswith("matrix="))
    assert json.loads(line.removeprefix("matrix=")) == document["result"]
    assert " " not in line  # compact, one line, ready for fromJSON
    assert "count=2" in written


def test_text_format_prints_the_table(tmp_path: Path) -> None:
    code, out, _ = run(tmp_path, "matrix", "--drop-invalid", "--format", "text")
    assert code == 0
    assert "train-cuda12.6-python3.12" in out and "min driver" in out


def test_unknown_image_name(tmp_path: Path) -> None:
    code, _, err = run(tmp_path, "matrix", "--image", "serve")
    assert code == 2 and "no image named 'serve'" in err


def test_unknown_axis_in_template_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "gpuship.yaml").write_text(CONFIG.replace("py{python}", "py{pyton}"))
    code, _, err = run(tmp_path, "matrix")
    assert code == 2
    assert "images[train].tags[0]: unknown axis 'pyton'" in err


def test_fleet_file_gives_targets(tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").write_text('gpus: ["NVIDIA A100-SXM4-80GB", "H100"]\n')
    (tmp_path / "gpuship.yaml").write_text(
        "images:\n  - name: s\n    repository: r.io/s\n    axes: {cuda: ['12.6']}\n"
        "    targets: fleet.yaml\n"
    )
    code, out, _ = run(tmp_path, "matrix", "--format", "json")
    assert code == 0
    (cell,) = json.loads(out)["result"]["include"]
    expected = sorted({gpu_compute_capability(n) for n in ("NVIDIA A100-SXM4-80GB", "H100")})
    assert cell["arch_list"] == ";".join(str(cc) for cc in expected)


def test_unknown_gpu_in_fleet_file(tmp_path: Path) -> None:
    (tmp_path / "fleet.yaml").write_text("gpus: [Voodoo5]\n")
    (tmp_path / "gpuship.yaml").write_text(
        "images:\n  - name: s\n    repository: r.io/s\n    axes: {cuda: ['12.6']}\n"
        "    targets: fleet.yaml\n"
    )
    code, _, err = run(tmp_path, "matrix")
    assert code == 2 and "GPU 'Voodoo5' is not in the knowledge base" in err


def test_an_empty_matrix_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "gpuship.yaml").write_text(
        "images:\n  - name: s\n    repository: r.io/s\n"
        "    axes: {cuda: ['12.4'], torch: ['2.7.0']}\n"
    )
    code, _, err = run(tmp_path, "matrix", "--drop-invalid")
    assert code == 2 and "the matrix has no cells (1 invalid combinations left out)" in err


def test_axis_override_and_extra_entries(tmp_path: Path) -> None:
    code, out, err = run(
        tmp_path,
        "matrix",
        "--axis",
        "python=3.12",
        "--exclude",
        '[{"cuda": "12.4"}]',
        "--drop-invalid",
        "--format",
        "json",
    )
    assert code == 0, err
    document = json.loads(out)
    assert [c["id"] for c in document["result"]["include"]] == ["train-cuda12.6-python3.12"]
    # As on GitHub: the include entry for 12.4 fits no remaining cell, so it becomes its own
    # (and that one has no torch wheel, so it is left out with a note).
    (note,) = document["findings"]
    assert note["message"].startswith("left out train-cuda12.4-torch2.7.0")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--axis", "rocm=6.0"], "no selected image has an axis 'rocm'"),
        (["--axis", "python"], "expected NAME=V1,V2"),
        (["--include", "[1]"], "expected a JSON list of objects"),
        (["--include", '[{"cuda": 12.4}]'], "quote versions"),
    ],
)
def test_bad_overrides(tmp_path: Path, args: list[str], message: str) -> None:
    code, _, err = run(tmp_path, "matrix", *args)
    assert code == 2 and message in err, err


def test_several_images_and_the_github_job_limit(tmp_path: Path) -> None:
    shards = ", ".join(f"'s{i}'" for i in range(200))
    (tmp_path / "gpuship.yaml").write_text(
        "images:\n"
        "  - name: prep\n    role: data-prep\n    repository: r.io/prep\n"
        f"    axes: {{shard: [{shards}]}}\n"
        "  - name: train\n    repository: r.io/train\n"
        f"    axes: {{cuda: ['12.6'], shard: [{shards}]}}\n"
    )
    code, out, _ = run(tmp_path, "matrix", "--format", "json")
    document = json.loads(out)
    assert code == 0
    cells = document["result"]["include"]
    assert len(cells) == 400
    assert {c["image"] for c in cells} == {"prep", "train"}
    assert [f["rule"] for f in document["findings"]] == ["GSB103"]
    code, out, _ = run(tmp_path, "matrix", "--image", "prep", "--format", "json")
    only = json.loads(out)
    assert code == 0 and not only["findings"]
    assert {c["role"] for c in only["result"]["include"]} == {"data-prep"}


def _axes_config(values_per_axis: int, axes: int, include: int = 0) -> str:
    lines = [
        "images:",
        "  - name: wide",
        "    repository: 127.0.0.1:5000/acme/wide",
        "    cell-id: 'wide-{a0}-{a1}-{a2}-{a3}-{a4}-{a5}'" if axes == 6 else "",
        "    axes:",
    ]
    for axis in range(axes):
        lines.append(f"      a{axis}: [{', '.join(f'v{n}' for n in range(values_per_axis))}]")
    if include:
        lines.append("    include:")
        lines += [f"      - {{extra: x{n}}}" for n in range(include)]
    return "\n".join(line for line in lines if line) + "\n"


def test_a_million_cells_are_refused_before_one_is_made(tmp_path: Path) -> None:
    (tmp_path / "gpuship.yaml").write_text(_axes_config(10, 6))
    code, out, err = run(tmp_path, "matrix")
    assert code == 2
    assert out == ""
    assert "images[wide]: the selected images' axes and include entries make up to " in err
    assert "1000000 cells" in err
    assert "(limit limits.matrix-max-cells: 10000)" in err


def test_matrix_cells_at_the_limit_and_past_it(tmp_path: Path) -> None:
    # 2 x 2 axes + 1 include entry = 5 cells at most.
    (tmp_path / "gpuship.yaml").write_text(_axes_config(2, 2, include=1))
    at = run(tmp_path, "matrix", "--format", "json", env={"GPUSHIP_LIMITS__MATRIX_MAX_CELLS": "5"})
    assert at[0] == 0, at[2]
    # The include entry extends the four originals instead of adding a fifth cell.
    assert len(json.loads(at[1])["result"]["include"]) == 4
    past = run(tmp_path, "matrix", env={"GPUSHIP_LIMITS__MATRIX_MAX_CELLS": "4"})
    assert past[0] == 2
    assert "make up to 5 cells" in past[2]


@pytest.mark.parametrize("flag", ["--include", "--exclude"])
def test_deeply_nested_include_is_a_usage_error_not_a_traceback(tmp_path: Path, flag: str) -> None:
    code, _, err = run(tmp_path, "matrix", flag, "[" * 50_000 + "]" * 50_000)
    assert code == 2
    assert f"gpuship: error: {flag}: JSON nests deeper than 64 levels" in err
    assert "Traceback" not in err
