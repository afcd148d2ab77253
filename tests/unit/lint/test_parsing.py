"""The building blocks: source maps, ARG expansion, shell splitting, .dockerignore, packages."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuship.dockerfile.source import SourceMap, Text, parse_dockerfile
from gpuship.lint.dockerignore import IgnoreRules
from gpuship.lint.packages import (
    classify,
    conda_spec,
    os_package_pinned,
    parse_conda_env,
    parse_requirements,
)
from gpuship.lint.shell import ShellParser, expand_shell
from gpuship.lint.stages import build_stages, expand


def text(value: str) -> Text:
    return Text(value, SourceMap(((0, 1, 1),)))


@pytest.mark.parametrize(
    ("template", "env", "expected"),
    [
        ("nvidia/cuda:${CUDA}-runtime", {"CUDA": "12.4.1"}, ("nvidia/cuda:12.4.1-runtime", True)),
        ("${CUDA:-12.1}", {}, ("12.1", True)),
        ("${CUDA:-12.1}", {"CUDA": ""}, ("12.1", True)),
        ("${CUDA-12.1}", {"CUDA": ""}, ("", True)),
        ("${CUDA:+cu}", {"CUDA": "1"}, ("cu", True)),
        ("$CUDA", {"CUDA": None}, ("$CUDA", False)),
        ("\\$HOME", {}, ("$HOME", True)),
    ],
)
def test_expand(template: str, env: dict[str, str | None], expected: tuple[str, bool]) -> None:
    assert expand(template, env) == expected


def test_stages_args_env_and_reachability() -> None:
    parsed = parse_dockerfile(
        'ARG BASE=ubuntu:22.04\nARG PY\nFROM ${BASE} AS base\nARG PY=3.11\nENV A=1 B="x y"\n'
        "WORKDIR app\nFROM base AS build\nRUN make\nFROM scratch AS unused\n"
        "FROM base\nCOPY --from=build /out /out\n",
        Path("Dockerfile"),
    )
    build = build_stages(parsed, {"PY": "3.12"}, None)
    base, build_stage, unused, final = build.stages
    assert base.base == "ubuntu:22.04" and base.final_state.env["PY"] == "3.12"
    assert base.final_state.env["B"] == "x y" and base.final_state.workdir == "/app"
    assert final.parent == 0 and final.states[0].env["A"] == "1"
    assert build.final_chain == (3, 0)
    assert build.reachable == frozenset({0, 1, 3}) and unused.index not in build.reachable
    assert build_stage.parent == 0


def test_columns_survive_continuations_and_comments() -> None:
    parsed = parse_dockerfile(
        "FROM a\nRUN apt-get update \\\n# note\n\n    && pip install \\\n  torch\n", Path("D")
    )
    run = parsed.instructions[1]
    span = run.locate("torch")
    assert (span.line, span.column, span.end_column) == (6, 3, 8)


@pytest.mark.parametrize("budget", [0, 100_000])
def test_shell_split_with_and_without_bashlex(budget: int) -> None:
    source = "FOO=1 sudo -E pip install 'a>=1' b && curl -fsSL https://x | sh -c \"bash -e\""
    script = ShellParser(budget=budget).parse(text(source))
    names = [c.name for c in script.commands]
    assert names[:3] == ["pip", "curl", "sh"]
    pip = script.commands[0]
    assert pip.argv == ["pip", "install", "a>=1", "b"] and [a.text for a in pip.assignments] == [
        "FOO=1"
    ]
    assert pip.span(pip.words[2]).column == source.index("'a>=1'") + 1
    curl, shell = script.commands[1], script.commands[2]
    assert curl.pipeline == shell.pipeline and shell.position == curl.position + 1


@pytest.mark.parametrize("budget", [0, 100_000])
def test_wrappers_and_environment_runners(budget: int) -> None:
    """`sudo -u USER`, `conda run -n ENV --no-capture-output` and `micromamba run -n ENV` run
    the command after them; `sudo`'s value options are not the command."""
    source = (
        "sudo -u app -H pip install a; conda run -n ml --no-capture-output pip install b; "
        "micromamba run -n base python -m pip install c; mamba run -p /env -v uv pip install d"
    )
    script = ShellParser(budget=budget).parse(text(source))
    assert [c.argv for c in script.commands] == [
        ["pip", "install", "a"],
        ["pip", "install", "b"],
        ["python", "-m", "pip", "install", "c"],
        ["uv", "pip", "install", "d"],
    ]


def test_a_line_continuation_is_no_word() -> None:
    """`a && \\` then a newline: the next line's command is a command, not the argument of an
    empty one; `''` stays an empty word."""
    script = ShellParser(budget=0).parse(text("apt-get update && \\\n    conda install x ''"))
    assert [c.argv for c in script.commands] == [
        ["apt-get", "update"],
        ["conda", "install", "x", ""],
    ]


@pytest.mark.parametrize(
    ("word", "expected"),
    [
        ("cu$(echo $V | tr -d .)", ("cu12", True)),
        ("`git describe`", ("`git describe`", False)),
        ("v${V}", ("v1.2", True)),
        ("$UNSET", ("$UNSET", False)),
    ],
)
def test_command_substitution_is_computed_or_unknown(word: str, expected: tuple[str, bool]) -> None:
    assert expand_shell(word, {"V": "1.2", "UNSET": None}) == expected


def test_shell_compound_and_unsupported_syntax() -> None:
    parser = ShellParser()
    compound = parser.parse(text("if [ -f r.txt ]; then pip install -r r.txt; fi"))
    assert "pip" in {c.name for c in compound.commands}
    case = parser.parse(text("case $x in a) pip install y;; esac; echo $((1+2))"))
    assert {"pip", "echo"} <= {c.name for c in case.commands}


@pytest.mark.parametrize(
    ("patterns", "path", "excluded"),
    [
        ("models\n", "models/a/b.safetensors", True),
        ("**/*.ckpt\n", "a/b/c.ckpt", True),
        ("*.ckpt\n", "a/b.ckpt", False),
        ("models\n!models/keep.json\n", "models/keep.json", False),
        ("/data\n", "data/x", True),
        ("# c\n\n*.bin\n", "x.bin", True),
        ("ckpt?\n", "ckpt1/x", True),
    ],
)
def test_dockerignore_semantics(patterns: str, path: str, excluded: bool) -> None:
    assert IgnoreRules.parse(patterns).excluded(path) is excluded


@pytest.mark.parametrize(
    ("requirement", "pinned"),
    [
        ("torch==2.5.1", True),
        ("torch===2.5.1", True),
        ("torch==2.*", False),
        ("torch>=2", False),
        ("torch~=2.5", False),
        ("torch", False),
        ("./wheels/torch.whl", True),
        ("git+https://github.com/o/r@0123abcd", True),
        ("git+https://github.com/o/r@main", False),
        ("pkg @ https://example.com/pkg-1.0.tar.gz", True),
        ("torch==${V}", True),
    ],
)
def test_classify(requirement: str, pinned: bool) -> None:
    assert classify(requirement, None, {"V": None}).pinned is pinned


def test_requirements_file_parsing() -> None:
    parsed = parse_requirements(
        "# top\n-r base.txt\n-c constraints.txt\nnumpy==1.26.4 \\\n    --hash=sha256:ab\n"
        "scipy>=1 ; python_version > '3.8'  # why\n\n-e ./local\n"
    )
    assert parsed.includes == ("base.txt",) and parsed.constraints == ("constraints.txt",)
    assert parsed.hashes
    lines = [(r.line, r.spec.pinned) for r in parsed.requirements]
    assert lines == [(4, True), (6, False), (8, True)]


def test_conda_specs_and_env_file() -> None:
    assert conda_spec("numpy=1.26.4", None, {}).pinned
    assert conda_spec("conda-forge::numpy==1.26.4=py311h", None, {}).pinned
    assert not conda_spec("numpy>=1.26", None, {}).pinned
    specs = parse_conda_env(
        "name: x\ndependencies:\n  - python=3.11\n  - numpy\n  - pip:\n    - torch==2.5.1\n"
        "    - accelerate\n"
    )
    assert [(s.spec.name, s.line, s.pip, s.spec.pinned) for s in specs] == [
        ("numpy", 4, False, False),
        ("torch", 6, True, True),
        ("accelerate", 7, True, False),
    ]


@pytest.mark.parametrize(
    ("manager", "package", "pinned"),
    [
        ("apt", "curl=7.81.0-1", True),
        ("apt", "curl", False),
        ("apt", "./x.deb", True),
        ("apk", "curl~8.9", True),
        ("dnf", "gcc-11.4.1", True),
        ("dnf", "gcc-c++", False),
    ],
)
def test_os_package_pins(manager: str, package: str, pinned: bool) -> None:
    assert os_package_pinned(manager, package) is pinned
