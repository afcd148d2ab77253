"""`gpuship docs --image-map`: the operations guide's image map from gpuship.yaml + lock."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from gpuship.cli.main import main
from gpuship.cuda.drivers import min_driver_for

CONFIG = """\
images:
  - name: trainer
    role: training
    repository: registry.example/ml/trainer
    base-image: "registry.example/base/cuda:{cuda}-runtime"
    axes:
      cuda: ["12.4", "12.6"]
    tags: ["cu{cuda|nodot}"]
    targets: [sm_80, sm_90]
  - name: server
    role: inference
    repository: registry.example/ml/server
    base-image: "registry.example/base/cuda:{cuda}-runtime"
    axes:
      cuda: ["12.6"]
    tags: ["cu{cuda|nodot}"]
"""
DIGEST = "sha256:" + "ab" * 32


def image_map(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, locked: list[str]) -> str:
    (tmp_path / "gpuship.yaml").write_text(CONFIG)
    bases = "".join(f'  "registry.example/base/cuda:{v}-runtime": "{DIGEST}"\n' for v in locked)
    (tmp_path / "gpuship.lock").write_text(f"version: 1\nbases:\n{bases}")
    monkeypatch.chdir(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    assert main(["docs", "--image-map"], environ={}, stdout=out, stderr=err) == 0, err.getvalue()
    return out.getvalue()


def test_map_lists_tasks_cells_drivers_and_locked_bases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = image_map(tmp_path, monkeypatch, ["12.4", "12.6"])
    summary = text.split("## ", 1)[0]
    # Training first, then inference; the lowest driver is the KB's floor for 12.4.
    assert summary.index("| training |") < summary.index("| inference |")
    assert "| training | [`trainer`](#trainer) | `registry.example/ml/trainer` | 2 | " in summary
    assert str(min_driver_for("12.4")) in summary
    assert "## trainer" in text and "## server" in text
    assert text.count("@ `sha256:abababab") == 3
    assert "`registry.example/ml/trainer:cu124`" in text and "not locked" not in text


def test_unlocked_bases_are_listed_as_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = image_map(tmp_path, monkeypatch, ["12.6"])
    assert "Left out of the matrix:" in text
    assert "registry.example/base/cuda:12.4-runtime is not in gpuship.lock" in text


def test_base_lineage_names_the_images_a_base_rebuilds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = image_map(tmp_path, monkeypatch, ["12.4", "12.6"])
    lineage = text.split("## Base lineage", 1)[1].split("## trainer", 1)[0]
    # 12.6 is the base of both images, 12.4 of the trainer only.
    assert "| `registry.example/base/cuda:12.6-runtime` | `trainer`, `server` |" in lineage
    assert "| `registry.example/base/cuda:12.4-runtime` | `trainer` |" in lineage
    trainer = text.split("## trainer", 1)[1].split("## server", 1)[0]
    rows = {line.split(" | ")[0]: line for line in trainer.splitlines() if line.startswith("| `")}
    assert rows["| `trainer-cuda12.4`"].endswith("| - | - |")
    assert rows["| `trainer-cuda12.6`"].endswith("| - | `server` |")


def test_sizes_render_pushed_and_missing_cells(tmp_path: Path) -> None:
    import yaml

    from gpuship.matrix.config import ImageConfig
    from gpuship.matrix.image_map import render_image_map
    from gpuship.matrix.project import load_project, plan_images

    (tmp_path / "gpuship.yaml").write_text(CONFIG)
    bases = "".join(
        f'  "registry.example/base/cuda:{v}-runtime": "{DIGEST}"\n' for v in ("12.4", "12.6")
    )
    (tmp_path / "gpuship.lock").write_text(f"version: 1\nbases:\n{bases}")
    images = [ImageConfig.model_validate(item) for item in yaml.safe_load(CONFIG)["images"]]
    project = load_project(tmp_path / "gpuship.yaml", images)
    plans = plan_images(project, images, {})
    text = render_image_map(
        images, plans, sizes={"trainer-cuda12.4": 3 << 30, "trainer-cuda12.6": None}
    )
    trainer = text.split("## trainer", 1)[1].split("## server", 1)[0]
    assert "| 3.0 GiB | - |" in trainer
    assert "| not pushed | `server` |" in trainer
