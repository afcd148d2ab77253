"""The stage graph: BuildKit's automatic platform ARGs and every target of a file."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import Linter, positions
from gpuship.dockerfile.source import read_dockerfile
from gpuship.lint.stages import Build, build_targets, platform_args, runner_platform


def targets(tmp_path: Path, text: str, **kwargs: object) -> tuple[Build, ...]:
    path = tmp_path / "Dockerfile"
    path.write_text(text)
    return build_targets(read_dockerfile(path), {}, None, **kwargs)  # type: ignore[arg-type]


def test_platform_args_split_like_buildkit() -> None:
    values = platform_args("linux/arm/v7")
    assert values["TARGETPLATFORM"] == "linux/arm/v7"
    assert (values["TARGETOS"], values["TARGETARCH"], values["TARGETVARIANT"]) == (
        "linux",
        "arm",
        "v7",
    )
    assert values["BUILDPLATFORM"] == runner_platform()
    assert platform_args("linux/amd64")["TARGETVARIANT"] == ""
    assert runner_platform().startswith("linux/")


def test_targetarch_resolves_in_from(tmp_path: Path) -> None:
    text = (
        "FROM ubuntu:22.04 AS base-amd64\nFROM ubuntu:22.04 AS base-arm64\n"
        "FROM base-${TARGETARCH} AS final\n"
    )
    (amd,) = targets(tmp_path, text, platform="linux/amd64")
    final = amd.stages[amd.target]
    assert final.base == "base-amd64" and final.parent == 0
    assert amd.reachable == {0, 2}
    (arm,) = targets(tmp_path, text, platform="linux/arm64")
    assert arm.stages[arm.target].parent == 1


def test_platform_arg_in_stage_only_after_declaration(tmp_path: Path) -> None:
    text = "FROM ubuntu:22.04\nRUN echo $TARGETARCH\nARG TARGETARCH\nRUN echo $TARGETARCH\n"
    (build,) = targets(tmp_path, text, platform="linux/arm64")
    before, _, after = build.stages[0].states
    assert "TARGETARCH" not in before.env
    assert after.env["TARGETARCH"] == "arm64"


def test_build_arg_overrides_platform_arg(tmp_path: Path) -> None:
    path = tmp_path / "Dockerfile"
    path.write_text("FROM img-${TARGETARCH}\n")
    (build,) = build_targets(read_dockerfile(path), {"TARGETARCH": "s390x"}, None, "linux/amd64")
    assert build.stages[0].base == "img-s390x"


def test_every_target_is_built(tmp_path: Path) -> None:
    text = (
        "FROM python:3.12 AS base\n"
        "FROM base AS builder\n"
        "FROM base AS full\nCOPY --from=builder /a /a\n"
        "FROM base AS slim\n"
    )
    builds = targets(tmp_path, text)
    names = [b.stages[b.target].name for b in builds]
    assert names == ["slim", "full"]  # the last stage first; base and builder feed others


@pytest.mark.parametrize(
    ("image_arg", "expected"),
    [
        # The variable names an image (its default has `/` and `:`): it picks no stage, and
        # every variant built on `runtime` is a target.
        ("nvidia/cuda:12.8.1-devel-ubuntu24.04", ["server", "tools", "cli"]),  # the last first
        # The variable names a stage: `tools`, `cli` and `server` may be the base it picks.
        ("runtime", ["server"]),
    ],
)
def test_a_from_variable_naming_an_image_leaves_every_variant_a_target(
    tmp_path: Path, image_arg: str, expected: list[str]
) -> None:
    text = (
        f"ARG BUILD_IMAGE={image_arg}\n"
        "FROM ${BUILD_IMAGE} AS compile\nRUN make\n"
        "FROM ubuntu:24.04 AS runtime\nCOPY --from=compile /out /opt/app\n"
        "FROM runtime AS tools\nRUN apt-get install -y python3\n"
        'FROM runtime AS cli\nENTRYPOINT ["/opt/app/cli"]\n'
        'FROM runtime AS server\nENTRYPOINT ["/opt/app/server"]\n'
    )
    builds = targets(tmp_path, text)
    assert [b.stages[b.target].name for b in builds] == expected


def test_findings_of_all_targets_are_merged(lint: Linter) -> None:
    dockerfile = (
        "FROM python:3.12 AS full\nRUN pip install torch\n"
        "FROM python:3.12 AS slim\nRUN pip install numpy\n"
    )
    assert positions(lint(dockerfile), "GSL105") == [(2, 17), (4, 17)]
    assert positions(lint(dockerfile, target="slim"), "GSL105") == [(4, 17)]


def test_a_finding_shared_by_targets_is_reported_once(lint: Linter) -> None:
    dockerfile = "FROM python:3.12 AS base\nRUN pip install numpy\nFROM base AS a\nFROM base AS b\n"
    assert positions(lint(dockerfile), "GSL105") == [(2, 17)]


@pytest.mark.parametrize(("platform", "line"), [("linux/amd64", 2), ("linux/arm64", 4)])
def test_arch_specific_stage_is_linted_for_the_platform(
    lint: Linter, platform: str, line: int
) -> None:
    dockerfile = (
        "FROM ubuntu:22.04 AS base-amd64\nRUN pip install a\n"
        "FROM ubuntu:22.04 AS base-arm64\nRUN pip install b\n"
        "FROM base-${TARGETARCH}\nUSER 1000\n"
    )
    assert positions(lint(dockerfile, platform=platform), "GSL105") == [(line, 17)]


def test_a_stage_inherits_env_but_not_args(tmp_path: Path) -> None:
    text = (
        "FROM alpine:3.19 AS a\nARG A=1\nENV E=2\nARG B=3\nENV B=$B\nWORKDIR /app\nUSER app\n"
        "FROM a AS b\nARG E=4\n"
        "FROM b AS c\nRUN true\n"
    )
    (build,) = targets(tmp_path, text)
    a, b, c = build.stages
    assert dict(a.final_state.env) == {"A": "1", "E": "2", "B": "3"}
    assert dict(b.states[0].env) == {"E": "2", "B": "3"}  # A ended with stage a
    # E came from an ENV, so the value an ARG gave it in b goes on into c's image.
    assert dict(c.states[0].env) == {"E": "4", "B": "3"}
    assert (c.states[0].workdir, c.states[0].user) == ("/app", "app")
    assert build.root_base(c) is a and build.final_chain == (2, 1, 0)


def test_a_workdir_longer_than_linux_allows_does_not_grow(tmp_path: Path) -> None:
    # 4096 bytes is Linux's PATH_MAX: a longer WORKDIR fails the build, and thousands of
    # relative ones would otherwise hold an ever longer path in every later state.
    at = "/" + "x" * 4094  # 4095 bytes and the NUL: the longest path Linux takes
    text = f"FROM alpine:3.19\nWORKDIR {at}\nRUN true\nWORKDIR y\nRUN true\n"
    (build,) = targets(tmp_path, text)
    states = build.stages[0].states
    assert states[1].workdir == at
    assert states[3].workdir == at  # /xxx.../y would be 4097 bytes


def test_one_env_expands_every_value_with_the_values_before_it(tmp_path: Path) -> None:
    """Docker's reference: `ENV abc=hello` then `ENV abc=bye def=$abc` sets def to hello."""
    (build,) = targets(tmp_path, "FROM ubuntu:22.04\nENV abc=hello\nENV abc=bye def=$abc\n")
    env = build.stages[0].final_state.env
    assert (env["abc"], env["def"]) == ("bye", "hello")


def test_one_arg_sees_the_args_before_it_on_its_line(tmp_path: Path) -> None:
    """BuildKit's dispatchArg adds each ARG before it expands the next one's default."""
    (build,) = targets(tmp_path, "FROM ubuntu:22.04\nARG A=1 B=${A}2\n")
    assert build.stages[0].final_state.env["B"] == "12"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('"a b"', "a b"),
        ("a\\ b", "a b"),
        ("\"a \"'b'", "a b"),
        ("'$X'", "$X"),
        ("\\$X", "$X"),
        ('"${X}y"', "xy"),
        ('"a\\ b"', "a\\ b"),  # a backslash escapes only " $ \ inside double quotes
    ],
)
def test_env_values_are_processed_as_buildkit_does(
    tmp_path: Path, value: str, expected: str
) -> None:
    (build,) = targets(tmp_path, f"FROM ubuntu:22.04\nENV X=x\nENV V={value}\nWORKDIR /w\n")
    assert build.stages[0].final_state.env["V"] == expected
