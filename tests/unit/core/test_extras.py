"""Commands name the extra they need when its modules are missing, and the table agrees
with the package's declared extras."""

from __future__ import annotations

import io
import re
import sys
from pathlib import Path

import pytest

from gpuship.cli import extras
from gpuship.cli.main import main

tomllib = pytest.importorskip("tomllib")
PYPROJECT = Path(__file__).resolve().parents[3] / "pyproject.toml"
# Distribution name -> the module it installs.
IMPORT_NAMES = {
    "requests": "requests",
    "docker": "docker",
    "isal": "isal",
    "zstandard": "zstandard",
    "pyelftools": "elftools",
    "nvidia-ml-py": "pynvml",
    "h11": "h11",
    "cryptography": "cryptography",
    "prometheus-client": "prometheus_client",
}


def _modules(extra: str, declared: dict[str, list[str]]) -> set[str]:
    found: set[str] = set()
    for requirement in declared[extra]:
        name = re.split(r"[<>=;\[ ]", requirement, maxsplit=1)[0]
        if name == "gpuship":
            inner = requirement[requirement.index("[") + 1 : requirement.index("]")]
            for other in inner.split(","):
                found |= _modules(other, declared)
        else:
            found.add(IMPORT_NAMES[name])
    return found


def test_table_matches_pyproject_extras() -> None:
    declared = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]
    for extra, modules in extras.EXTRAS.items():
        assert _modules(extra, declared) == set(modules), extra
    assert _modules("all", declared) == {m for ms in extras.EXTRAS.values() for m in ms}
    base = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    assert not {re.split(r"[<>=;\[ ]", r, maxsplit=1)[0] for r in base} & set(IMPORT_NAMES)


@pytest.mark.parametrize(
    ("argv", "extra"),
    [
        (["inspect", "alpine"], "image"),
        (["lint", "--image", "alpine", "Dockerfile"], "image"),
        (["verify", "alpine"], "verify"),
        (["promote", "r/a:1", "--to", "2"], "release"),
        (["lock"], "build"),
    ],
)
def test_missing_extra_is_one_line_exit_3(
    argv: list[str], extra: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "zstandard", None)  # as if never installed
    monkeypatch.setitem(sys.modules, "docker", None)
    monkeypatch.chdir(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    assert main(argv, environ={}, stdout=out, stderr=err) == 3
    assert err.getvalue().count("\n") == 1
    assert f"needs the '{extra}' extra" in err.getvalue()
    assert f"pip install 'gpuship[{extra}]'" in err.getvalue()


def test_lint_needs_no_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("requests", "docker", "isal", "zstandard", "elftools", "pynvml"):
        monkeypatch.setitem(sys.modules, name, None)
    (tmp_path / "Dockerfile").write_text("FROM ubuntu:24.04\nRUN pip install torch\n")
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    assert main(["lint", "Dockerfile", "--fail-on", "never"], environ={}, stdout=out) == 0
    assert "GSL105" in out.getvalue()


def test_an_import_failing_inside_a_command_names_its_extra() -> None:
    hint = extras.explain("inspect", ModuleNotFoundError("no zstd", name="zstandard"))
    assert hint is not None and "'image' extra" in str(hint) and hint.exit_code == 3
    assert extras.explain("lint", ModuleNotFoundError("x", name="numpy")) is None


def test_action_lock_pins_the_base_and_every_extra() -> None:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    lock = (PYPROJECT.parent / "requirements" / "action.txt").read_text()
    pinned = {line.split("==")[0].lower() for line in lock.splitlines() if "==" in line}
    wanted = {re.split(r"[<>=;\[ ]", r, maxsplit=1)[0].lower() for r in project["dependencies"]}
    for extra in extras.EXTRAS:
        for requirement in project["optional-dependencies"][extra]:
            wanted.add(re.split(r"[<>=;\[ ]", requirement, maxsplit=1)[0].lower())
    assert wanted - {"gpuship"} <= pinned
    assert "--hash=sha256:" in lock and "dockerfile" not in pinned
