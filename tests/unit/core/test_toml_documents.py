"""`documents.load_toml`: TOML on every supported Python. 3.11+ read it with the standard
library's tomllib; 3.10 (Ubuntu 22.04's python3, which actions use by default) with tomli,
the package tomllib was taken from. The 3.10 path runs here by making `sys.version_info` say
3.10, with tomli installed by the test extra."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gpuship.documents import load_toml
from gpuship.errors import InputError
from gpuship.host import readiness
from gpuship.lint.packages import parse_pyproject

PYPROJECT = """
[project]
name = "svc"
dependencies = ["torch==2.5.1", "numpy<2"]

[project.optional-dependencies]
serve = ["vllm==0.6.3"]
"""


@pytest.fixture(params=["3.11+", "3.10"])
def python(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test once as it runs here and once as on Python 3.10 (tomli, imported afresh)."""
    if request.param == "3.10":
        monkeypatch.setattr(sys, "version_info", (3, 10, 13, "final", 0))
        monkeypatch.delitem(sys.modules, "tomli", raising=False)
    return str(request.param)


@pytest.mark.usefixtures("python")
def test_a_document_reads_the_same_on_each_python() -> None:
    document = load_toml(PYPROJECT, "pyproject.toml")
    assert document["project"]["dependencies"] == ["torch==2.5.1", "numpy<2"]


def test_pyproject_dependencies_and_extras_are_read_on_each_python(python: str) -> None:
    names = [r.spec.name for r in parse_pyproject(PYPROJECT, ("serve",))]
    assert names == ["torch", "numpy", "vllm"]


def test_the_toolkit_mode_is_read_on_each_python(python: str, tmp_path: Path) -> None:
    config = tmp_path / readiness.TOOLKIT_CONFIG
    config.parent.mkdir(parents=True)
    config.write_text('[nvidia-container-runtime]\nmode = "cdi"\n')
    assert readiness.read_toolkit_mode(tmp_path) == "cdi"


def test_the_3_10_path_uses_tomli(python: str) -> None:
    load_toml("a = 1\n", "x.toml")
    if python == "3.10":
        assert "tomli" in sys.modules


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[project\nname = 1", "deps.toml: not TOML: "),
        ("a = " + "[" * 100_000 + "]" * 100_000 + "\n", "deps.toml: TOML nests too deep"),
    ],
)
def test_what_is_not_toml_is_one_input_error_naming_the_file(
    python: str, text: str, message: str
) -> None:
    with pytest.raises(InputError) as raised:
        load_toml(text, "deps.toml")
    assert str(raised.value).startswith(message), raised.value
    assert "\n" not in str(raised.value)
