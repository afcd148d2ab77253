"""Lint's work grows with the size of the Dockerfile, not with its square, and the two limits
on what stays super-linear (stage count; instructions summed over the targets) report what
they leave unchecked.

Work is counted, not timed: the lines of gpuship's own code that one lint executes
(`sys.settrace`), and the bytes the stage graph allocates (`tracemalloc`), for a file of n
stages or ARGs and one of 2n. Linear work doubles; the quadratic steps this replaced (a FROM
chain walked for each stage, every stage walked for each target, a dict of every ARG copied
for each instruction) made it up to four times.
"""

from __future__ import annotations

import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

import gpuship
from conftest import positions
from gpuship.dockerfile.source import read_dockerfile
from gpuship.limits import DEFAULT_LIMITS, Limits
from gpuship.lint.config import LintConfig
from gpuship.lint.engine import lint_file, rule_policy
from gpuship.lint.stages import build_targets
from gpuship.report import Finding

_PACKAGE = str(Path(gpuship.__file__).parent)


def _lint(path: Path, limits: Limits = DEFAULT_LIMITS) -> list[Finding]:
    settings = LintConfig().settings()
    result = lint_file(
        path,
        display="Dockerfile",
        context_dir=path.parent,
        build_args={},
        target=None,
        config=settings,
        policy=rule_policy(settings),
        platform="linux/amd64",
        limits=limits,
    )
    return list(result.findings)


def _lines_run(path: Path) -> int:
    """Lines of gpuship's code executed by one lint of `path`."""
    count = 0

    def line(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal count
        if event == "line":
            count += 1
        return line

    def call(frame: FrameType, event: str, arg: Any) -> Any:
        return line if frame.f_code.co_filename.startswith(_PACKAGE) else None

    previous = sys.gettrace()
    sys.settrace(call)
    try:
        _lint(path)
    finally:
        sys.settrace(previous)
    return count


def _chain_copy(n: int) -> str:
    return "FROM scratch AS s0\n" + "".join(
        f"FROM scratch AS s{i}\nCOPY --from=s{i - 1} /a /a\n" for i in range(1, n)
    )


def _from_chain(n: int) -> str:
    return "FROM alpine:3.19 AS s0\n" + "".join(
        f"FROM s{i - 1} AS s{i}\nENV V{i}={i}\nRUN echo $V{i}\n" for i in range(1, n)
    )


def _targets(n: int) -> str:
    return "".join(f"FROM alpine:3.19 AS s{i}\nARG V\nENV E{i}=$V\nRUN echo\n" for i in range(n))


def _args(n: int) -> str:
    lines = "".join(f"ARG A{i}=v{i}\nRUN echo $A{i}\n" for i in range(n))
    return "FROM alpine:3.19\n" + lines


def _mounts(n: int) -> str:
    return "FROM alpine:3.19 AS s0\n" + "".join(
        f"FROM alpine:3.19 AS s{i}\nRUN --mount=from=s{i - 1},target=/x true\n" for i in range(1, n)
    )


def _scripts(n: int) -> str:
    """Each RUN runs a script no COPY brought: lint looks for it through every copy before."""
    return "FROM alpine:3.19 AS s0\nCOPY a /a\n" + "".join(
        f"FROM s{i - 1} AS s{i}\nCOPY a /a{i}\nRUN ./install-{i}.sh\n" for i in range(1, n)
    )


def _scripts_one_stage(n: int) -> str:
    lines = "".join(f"COPY a /a{i}\nRUN ./install-{i}.sh\n" for i in range(n))
    return "FROM alpine:3.19\n" + lines


def _workdirs(n: int) -> str:
    """Each RUN runs a script one directory deeper: its path has as many prefixes as RUNs."""
    lines = "".join(f"WORKDIR d{i}\nRUN ./install.sh\n" for i in range(n))
    return "FROM alpine:3.19\nCOPY . /srv/\n" + lines


@pytest.mark.parametrize(
    "shape",
    [_chain_copy, _from_chain, _targets, _args, _mounts, _scripts, _scripts_one_stage, _workdirs],
    ids=lambda f: f.__name__,
)
def test_work_doubles_when_the_file_doubles(tmp_path: Path, shape: Callable[[int], str]) -> None:
    small, large = tmp_path / "small", tmp_path / "large"
    small.mkdir()
    large.mkdir()
    for directory, size in ((small, 150), (large, 300)):
        (directory / "Dockerfile").write_text(shape(size))
        (directory / "a").write_text("a\n")  # what the COPYs copy
    _lines_run(small / "Dockerfile")  # imports and caches filled once, outside the count
    ratio = _lines_run(large / "Dockerfile") / _lines_run(small / "Dockerfile")
    assert 1.8 < ratio < 2.3, ratio


def _bytes_kept(path: Path) -> int:
    """Bytes the stage graph of `path` holds (its values for every instruction)."""
    parsed = read_dockerfile(path)
    tracemalloc.start()
    try:
        builds = build_targets(parsed, {}, None, "linux/amd64")
        kept = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert builds
    return kept


@pytest.mark.parametrize("shape", [_from_chain, _args], ids=lambda f: f.__name__)
def test_memory_doubles_when_the_file_doubles(tmp_path: Path, shape: Callable[[int], str]) -> None:
    small, large = _write(tmp_path / "small", shape(500)), _write(tmp_path / "large", shape(1000))
    ratio = _bytes_kept(large) / _bytes_kept(small)
    assert 1.7 < ratio < 3.0, ratio  # persistent maps: n log n, a little over 2 (was 3.9)


def _write(tmp_path: Path, text: str) -> Path:
    tmp_path.mkdir(exist_ok=True)
    path = tmp_path / "Dockerfile"
    path.write_text(text)
    return path


def test_stages_at_the_limit_and_past_it(tmp_path: Path) -> None:
    limits = DEFAULT_LIMITS.override(dockerfile_max_stages=3)
    at = _lint(_write(tmp_path, "FROM python:3.12 AS a\nFROM a AS b\nFROM b AS c\n"), limits)
    assert positions(at, "GSL103") == [(1, 6)]
    assert positions(at, "GSL003") == []
    past = _lint(_write(tmp_path, "FROM python:3.12 AS a\nFROM a\nFROM a\nFROM a\n"), limits)
    (finding,) = past  # nothing else is checked
    assert (finding.rule, finding.location and finding.location.line) == ("GSL003", 4)
    assert "4 stages" in finding.message
    assert "limit limits.dockerfile-max-stages" in finding.message


# Two stages on a chain (2 instructions each with its FROM), then three one-stage targets
# built FROM its end: the last stage is the first target (6 instructions with its chain),
# then leaf0 and leaf1 (6 each).
_TREE = (
    "FROM python:3.12 AS c0\nRUN pip install a\n"
    "FROM c0 AS c1\nRUN pip install b\n"
    "FROM c1 AS leaf0\nRUN pip install c\n"
    "FROM c1 AS leaf1\nRUN pip install d\n"
    "FROM c1 AS leaf2\nRUN pip install e\n"
)


def test_targets_at_the_instruction_limit_and_past_it(tmp_path: Path) -> None:
    path = _write(tmp_path, _TREE)
    at = _lint(path, DEFAULT_LIMITS.override(targets_max_instructions=18))
    assert [line for line, _ in positions(at, "GSL105")] == [2, 4, 6, 8, 10]
    assert positions(at, "GSL003") == []
    past = _lint(path, DEFAULT_LIMITS.override(targets_max_instructions=17))
    assert [line for line, _ in positions(past, "GSL105")] == [2, 4, 6, 10]
    (limit,) = [f for f in past if f.rule == "GSL003"]
    assert limit.location is not None and limit.location.line == 7  # leaf1's FROM
    assert "1 targets are not checked (leaf1)" in limit.message
    assert "limit limits.targets-max-instructions" in limit.message


def test_the_first_target_is_checked_even_alone_past_the_limit(tmp_path: Path) -> None:
    past = _lint(_write(tmp_path, _TREE), DEFAULT_LIMITS.override(targets_max_instructions=1))
    assert [line for line, _ in positions(past, "GSL105")] == [2, 4, 10]
    (limit,) = [f for f in past if f.rule == "GSL003"]
    assert "2 targets are not checked (leaf0, leaf1)" in limit.message


def test_a_context_file_refused_by_a_later_check_is_reported(tmp_path: Path) -> None:
    # The requirements file is read by the pinning check; the limit report used to run
    # first, before any check had read (and refused) it.
    (tmp_path / "requirements.txt").write_text("torch\n" + "#" * 300 + "\n")
    path = _write(
        tmp_path, "FROM python:3.12\nCOPY requirements.txt .\nRUN pip install -r requirements.txt\n"
    )
    findings = _lint(path, DEFAULT_LIMITS.override(context_file_max_bytes=100))
    (unread,) = [f for f in findings if f.rule == "GSL003"]
    assert unread.location is not None and unread.location.file.endswith("requirements.txt")
    assert "limits.context-file-max-bytes" in unread.message


def test_expansion_growth_at_the_limit_and_past_it(tmp_path: Path) -> None:
    # Each ARG is the one before plus 4 bytes: 4, 8, then 12 bytes added by expansion.
    path = _write(tmp_path, "FROM scratch\nARG A=abcd\nARG B=$A$A\nARG C=$B$A\nARG D=$C$A\n")
    at = _lint(path, DEFAULT_LIMITS.override(expansion_max_total_bytes=24))
    assert positions(at, "GSL003") == []
    past = _lint(path, DEFAULT_LIMITS.override(expansion_max_total_bytes=23))
    (limit,) = [f for f in past if f.rule == "GSL003"]
    assert limit.location is not None and limit.location.line == 5
    assert "ARG D" in limit.message
    assert "limit limits.expansion-max-total-bytes" in limit.message
