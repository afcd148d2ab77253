"""Malformed matrix cells through the CLI (`route --matrix`, `fleet --matrix`): one clear line
naming the file and `include[i].field`, exit 2, never a traceback; the cells are validated by
the one contract every reader uses (gpuship.compat.cell)."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuship.cli.main import main
from unit.compat.compat_builders import H100, audit, gpu

SETTINGS = settings(
    max_examples=int(os.environ.get("GPUSHIP_HYPOTHESIS_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
CELL = {
    "id": "app-cu124",
    "image": "app",
    "repository": "registry.example/app",
    "tags": ["registry.example/app:cu124"],
    "cuda": "12.4",
    "min_driver": "550.54.14",
    "arch_list": "8.0;9.0",
    "platforms": ["linux/amd64"],
    "labels": {"io.gpuship.cell": "app-cu124"},
}
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=10,
)


def run(command: str, cell: Any, tmp_path: Path) -> tuple[int, str]:
    matrix = tmp_path / "matrix.json"
    matrix.write_text(json.dumps({"include": [dict(CELL), cell]}))
    if command == "route":
        argv = ["route", "--matrix", str(matrix), "--format", "k8s"]
    else:
        host = tmp_path / "audit.json"
        host.write_text(audit(570, [gpu(**H100)], labels=["h100"]).model_dump_json())
        argv = ["fleet", str(host), "--matrix", str(matrix)]
    out, err = io.StringIO(), io.StringIO()
    code = main(argv, {}, out, err)
    return code, err.getvalue()


@pytest.mark.parametrize("command", ["route", "fleet"])
@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"labels": ["x"]}, "include[1].labels"),
        ({"arch_list": [8.0]}, "include[1].arch_list"),
        ({"platforms": "linux/amd64"}, "include[1].platforms"),
        ({"tags": "registry.example/app:1"}, "include[1].tags"),
        ({"cuda": 12.4}, "include[1].cuda"),
        ({"id": "a\ntolerations: []"}, "include[1].id"),
        ({"labels": {"io.gpuship.cell": "x\ny"}}, "include[1].labels"),
    ],
)
def test_a_malformed_cell_is_exit_2_naming_the_file_and_field(
    command: str, changes: dict[str, Any], field: str, tmp_path: Path
) -> None:
    code, err = run(command, {**CELL, **changes}, tmp_path)
    assert code == 2, err
    assert f"matrix.json: {field}" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("command", ["route", "fleet"])
@SETTINGS
@given(key=st.sampled_from([*CELL, "digest", "build_args"]), value=JSON_VALUES)
def test_any_value_of_any_key_is_accepted_or_exit_2_without_a_traceback(
    command: str, key: str, value: Any, tmp_path: Path
) -> None:
    code, err = run(command, {**CELL, key: value}, tmp_path)
    assert code in (0, 1, 2), err
    assert "Traceback" not in err
    if code == 2:
        assert "matrix.json" in err and len(err.strip().splitlines()) == 1, err


def test_route_reads_the_matrix_within_limits_json_max_bytes(tmp_path: Path) -> None:
    # As fleet does: `--matrix /dev/zero` or a huge file is refused, not read into memory.
    matrix = tmp_path / "matrix.json"
    matrix.write_text(json.dumps({"include": [CELL]}))
    config = tmp_path / "gpuship.yaml"
    argv = ["--config", str(config), "route", "--matrix", str(matrix), "--format", "k8s"]
    codes, err = [], io.StringIO()
    for limit in (matrix.stat().st_size, matrix.stat().st_size - 1):
        config.write_text(f"limits: {{json-max-bytes: {limit}}}\n")
        err = io.StringIO()
        codes.append(main(argv, {}, io.StringIO(), err))
    assert codes == [0, 2], err.getvalue()
    assert "limits.json-max-bytes" in err.getvalue()
