"""Lint's work grows with the size of the Dockerfile, not with its square, and the two limits
on what stays super-linear (stage count; instructions summed over the targets) report what
they leave unchecked.

Work is counted, not timed: the lines of gpuship's own code that one lint executes
(`sys.settrace`), and the bytes the stage graph allocates (`tracemalloc`), for a file of n
stages or ARGs and one of 2n. Linear work doubles; the quadratic steps this replaced (a FROM
chain walked for each stage, every stage walked for each target, a dict of every ARG copied
for each instruction, every RUN of the file read again for each target, every earlier RUN or
later command looked at again for each RUN or download) made it up to four times.
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


# Shapes for the checks of issue #27 (GSL201, 106, 301, 505, 506, 511, 601, 702): each asked a
# question of every stage up a FROM chain, every earlier RUN or every later command, for each
# stage, RUN or download; on the code before they were made linear, these grew 2.5 to 3.2x.
_SHA = "0123456789abcdef0123456789abcdef01234567"
_WHEEL = (
    "https://example.com/flash_attn-2.7.4+cu12torch2.5cxx11abiFALSE-cp311-cp311-linux_x86_64.whl"
)


def _wheels_up_a_chain(n: int) -> str:
    """GSL511: each stage of a chain installs a wheel built for another torch."""
    return "FROM python:3.11 AS s0\nRUN pip install torch==2.6.0\n" + "".join(
        f"FROM s{i - 1} AS s{i}\nRUN pip install {_WHEEL}\n" for i in range(1, n)
    )


def _torch_up_a_chain(n: int) -> str:
    """GSL505: each stage of a chain installs torch and states NVIDIA_REQUIRE_CUDA."""
    return "FROM nvidia/cuda:12.4.1-cudnn-runtime-ubuntu22.04 AS s0\n" + "".join(
        f"FROM s{i - 1} AS s{i}\nENV NVIDIA_REQUIRE_CUDA=cuda>=12.0\n"
        f"RUN pip install torch==2.{i % 7}.0 --extra-index-url https://download.pytorch.org/whl/cu118\n"
        for i in range(1, n)
    )


def _pip_config_up_a_chain(n: int) -> str:
    """GSL301: `pip config set global.no-cache-dir true` at the root, pip in every stage."""
    return "FROM python:3.11 AS s0\nRUN pip config set global.no-cache-dir true\n" + "".join(
        f"FROM s{i - 1} AS s{i}\nRUN pip install numpy==1.26.{i}\n" for i in range(1, n)
    )


def _downloads_in_one_run(n: int) -> str:
    """GSL702 (and GSL108, GSL902): one RUN downloads n wheels and deletes one file."""
    downloads = " && ".join(f"wget https://x.org/a{i}.whl" for i in range(n))
    return f"FROM python:3.11\nRUN {downloads} && rm -f /tmp/x\n"


def _models_copied_from_a_chain(n: int) -> str:
    """GSL201: each stage of a chain downloads a model; the image copies each one."""
    chain = "".join(
        f"FROM {f's{i - 1}' if i else 'python:3.11'} AS s{i}\n"
        f"RUN huggingface-cli download org/m --local-dir /m{i}\n"
        for i in range(n)
    )
    return (
        chain + "FROM python:3.11\n" + "".join(f"COPY --from=s{i} /m{i} /m{i}\n" for i in range(n))
    )


def _uv_layers_up_a_chain(n: int) -> str:
    """GSL601: `uv sync --no-install-project` at the root, `COPY .` and `uv sync` in each stage."""
    return "FROM python:3.11 AS s0\nRUN uv sync --no-install-project\n" + "".join(
        f"FROM s{i - 1} AS s{i}\nCOPY . /app\nRUN uv sync\n" for i in range(1, n)
    )


def _script_dirs_run_last(n: int) -> str:
    """GSL601: n copies of a directory of code, each run from by one of the last RUNs."""
    copies = "".join(f"COPY scripts /tmp/s{i}/\n" for i in range(n))
    runs = "".join(f"RUN python /tmp/s{i}/install.py\n" for i in range(n - 1))
    return f"FROM python:3.11\n{copies}{runs}RUN pip install -r requirements.txt\n"


def _code_named_last(n: int) -> str:
    """GSL601: n code files copied, all named by the last RUN but one."""
    copies = "".join(f"COPY r{i}.py /opt/\n" for i in range(n))
    fillers = "".join(f"RUN echo {i}\n" for i in range(n))
    named = " ".join(f"/opt/r{i}.py" for i in range(n - 1))
    return f"FROM python:3.11\n{copies}{fillers}RUN python {named}\nRUN pip install -r r.txt\n"


def _clones_moved_last(n: int) -> str:
    """GSL106: n clones, n checkouts elsewhere, then one RUN checking out in every clone."""
    clones = "".join(f"RUN git clone https://github.com/o/r{i} d{i}\n" for i in range(n))
    others = "".join(f"RUN git -C x{i} checkout {_SHA}\n" for i in range(n))
    moves = " && ".join(f"cd /d{i}" for i in range(n))
    return f"FROM alpine:3.19\n{clones}{others}RUN {moves} && git checkout {_SHA}\n"


def _kernel_clones_built_later(n: int) -> str:
    """GSL506: n clones of a kernel project, then n builds of other directories."""
    clones = "".join(f"RUN git clone https://github.com/NVIDIA/apex /s/a{i}\n" for i in range(n))
    builds = "".join(f"RUN pip install /s/b{i}\n" for i in range(n))
    return f"FROM nvidia/cuda:12.4.1-devel-ubuntu22.04\n{clones}{builds}"


def _branches_in_one_run(n: int) -> str:
    """Issue #37: one RUN of n `if`s on a build arg; each command looked for its arms among
    every arm of the text."""
    chains = " \\\n".join(f'if [ "$V" = {i} ]; then echo {i}; fi;' for i in range(n))
    return f"FROM alpine:3.19\nARG V=3\nRUN {chains} true\n"


def _case_arms_in_one_run(n: int) -> str:
    """Issue #37: one RUN whose `case` has n arms."""
    arms = " \\\n".join(f"  v{i}) echo {i} ;;" for i in range(n))
    return f'FROM alpine:3.19\nARG V=v3\nRUN case "$V" in \\\n{arms} \\\nesac\n'


def _commented_compiler_installs(n: int) -> str:
    """GSL402: n RUNs installing a compiler, each under a comment read for a stated JIT need."""
    runs = "".join(f"# step {i}\nRUN apt-get install -y gcc-{i}\n" for i in range(n))
    return f"FROM ubuntu:22.04\n{runs}"


def _triggers_up_a_chain(n: int) -> str:
    """ONBUILD triggers read in each stage of a chain of n, each under a SHELL."""
    stages = "".join(
        f'FROM s{i - 1} AS s{i}\nSHELL ["/bin/bash", "-c"]\nONBUILD RUN pip install x{i}\n'
        "RUN if true; then echo; fi\n"
        for i in range(1, n)
    )
    return "FROM python:3.12 AS s0\n" + stages


# Files the shapes' COPYs take from the build context.
_CONTEXT = {"a": "a\n", "scripts/install.py": "print(1)\n"}


_SHAPES = (
    _chain_copy,
    _from_chain,
    _targets,
    _args,
    _mounts,
    _scripts,
    _scripts_one_stage,
    _workdirs,
    _wheels_up_a_chain,
    _torch_up_a_chain,
    _pip_config_up_a_chain,
    _downloads_in_one_run,
    _uv_layers_up_a_chain,
    _script_dirs_run_last,
    _branches_in_one_run,
    _case_arms_in_one_run,
    _triggers_up_a_chain,
)
# Shapes whose quadratic step is a small part of the work at 150: measured larger.
_LARGER = (
    _models_copied_from_a_chain,
    _code_named_last,
    _clones_moved_last,
    _kernel_clones_built_later,
    _commented_compiler_installs,
)


@pytest.mark.parametrize(
    ("shape", "size"),
    [pytest.param(shape, 150, id=shape.__name__) for shape in _SHAPES]
    + [pytest.param(shape, 300, id=shape.__name__) for shape in _LARGER],
)
def test_work_doubles_when_the_file_doubles(
    tmp_path: Path, shape: Callable[[int], str], size: int
) -> None:
    small, large = tmp_path / "small", tmp_path / "large"
    for directory, lines in ((small, size), (large, 2 * size)):
        for name, text in _CONTEXT.items():
            (directory / name).parent.mkdir(parents=True, exist_ok=True)
            (directory / name).write_text(text)
        (directory / "Dockerfile").write_text(shape(lines))
    _lines_run(small / "Dockerfile")  # imports and caches filled once, outside the count
    ratio = _lines_run(large / "Dockerfile") / _lines_run(small / "Dockerfile")
    assert 1.8 < ratio < 2.3, ratio


# Shapes whose build context grows with the file (issue #26, from review): each is the
# Dockerfile and the context files it uses, keyed by path.
def _make_runs(n: int) -> dict[str, str]:
    """n `RUN make tI` and a Makefile of n chained targets: the Makefile was parsed again for
    each `make` (three times: GSL201, GSL202 and GSL602 each looked for its downloads)."""
    rules = "".join(f"t{i}: t{i + 1}\n\techo {i}\n" for i in range(n))
    runs = "".join(f"RUN make t{i}\n" for i in range(n))
    return {
        "Makefile": rules,
        "Dockerfile": f"FROM python:3.11\nCOPY Makefile /app/\nWORKDIR /app\n{runs}",
    }


def _continued_makefile(n: int) -> dict[str, str]:
    """One recipe line continued over n lines, under a rule of n targets with n prerequisites:
    the continuation was joined by copying the line so far, and each recipe line and
    prerequisite was stored once per target."""
    names = " ".join(f"t{i}" for i in range(n))
    prerequisites = " ".join(f"p{i}" for i in range(n))
    recipe = "\techo \\\n" + "".join(f"  w{i} \\\n" for i in range(n)) + "  end\n"
    lines = "".join(f"\techo {i}\n" for i in range(n))
    return {
        "Makefile": f"{names}: {prerequisites}\n{recipe}{lines}",
        "Dockerfile": "FROM python:3.11\nCOPY Makefile /app/\nWORKDIR /app\nRUN make t0\n",
    }


def _copies_of_context_dirs(n: int) -> dict[str, str]:
    """n `COPY src/dI` of a context of n directories: every context file was scanned for each
    COPY source (by GSL201, GSL801, GSL905)."""
    copies = "".join(f"COPY src/d{i} /opt/d{i}/\n" for i in range(n))
    files = {f"src/d{i}/f.txt": "x\n" for i in range(n)}
    return files | {"Dockerfile": f"FROM python:3.11\n{copies}"}


def _requirements_each_copied(n: int) -> dict[str, str]:
    """n requirements files, each copied and installed by its own RUN."""
    lines = "".join(f"COPY r{i}.txt /app/\nRUN pip install -r /app/r{i}.txt\n" for i in range(n))
    files = {f"r{i}.txt": f"numpy=={i}.0\n" for i in range(n)}
    return files | {"Dockerfile": f"FROM python:3.11\n{lines}"}


def _copies_then_deletions(n: int) -> dict[str, str]:
    """n COPYs, then n RUNs each deleting something no COPY added: every path added so far
    was compared with each deleted word (GSL701)."""
    copies = "".join(f"COPY a /d{i}/a\n" for i in range(n))
    deletions = "".join(f"RUN rm -rf /x{i}\n" for i in range(n))
    return {"a": "a\n", "Dockerfile": f"FROM python:3.11\n{copies}{deletions}"}


@pytest.mark.parametrize(
    "shape",
    [
        _make_runs,
        _continued_makefile,
        _copies_of_context_dirs,
        _requirements_each_copied,
        _copies_then_deletions,
    ],
    ids=lambda f: f.__name__,
)
def test_work_doubles_when_the_file_and_its_context_double(
    tmp_path: Path, shape: Callable[[int], dict[str, str]]
) -> None:
    small, large = tmp_path / "small", tmp_path / "large"
    for directory, size in ((small, 150), (large, 300)):
        for name, text in shape(size).items():
            (directory / name).parent.mkdir(parents=True, exist_ok=True)
            (directory / name).write_text(text)
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
