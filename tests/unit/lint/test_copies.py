"""Which COPY from the build context put a path of the image in place: the latest copy wins,
a directory fills what lies below it (when it holds the file), a stage sees its FROM chain."""

from __future__ import annotations

from pathlib import Path

from gpuship.dockerfile.source import read_dockerfile
from gpuship.lint.context import BuildContext
from gpuship.lint.copies import CopyIndex
from gpuship.lint.stages import Build, build_stages

FILES = ("req.txt", "other.txt", "app/req.txt", "app/main.py", "tools/run.sh", "x.sh")


def _index(tmp_path: Path, dockerfile: str) -> tuple[Build, CopyIndex]:
    for name in FILES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name)
    path = tmp_path / "Dockerfile"
    path.write_text(dockerfile)
    build = build_stages(read_dockerfile(path), {}, None)
    return build, CopyIndex(build.stages, BuildContext(tmp_path, path))


def test_the_latest_copy_of_a_path_wins(tmp_path: Path) -> None:
    build, index = _index(
        tmp_path,
        "FROM python:3.12\nCOPY req.txt /r.txt\nCOPY other.txt /r.txt\nRUN true\n",
    )
    stage, run = build.stages[0], build.stages[0].instructions[-1]
    assert index.source(stage, run, "/r.txt") == "other.txt"
    # Before the second COPY, the first one is what is there.
    assert index.source(stage, stage.instructions[1], "/r.txt") == "req.txt"
    assert index.source(stage, stage.instructions[0], "/r.txt") is None


def test_into_a_directory_and_onto_a_path(tmp_path: Path) -> None:
    build, index = _index(
        tmp_path,
        "FROM python:3.12\nWORKDIR /w\nCOPY req.txt other.txt ./\nCOPY x.sh /bin/tool\nRUN true\n",
    )
    stage, run = build.stages[0], build.stages[0].instructions[-1]
    assert index.source(stage, run, "/w/req.txt") == "req.txt"
    assert index.source(stage, run, "/w/other.txt") == "other.txt"
    assert index.source(stage, run, "/bin/tool") == "x.sh"
    assert index.source(stage, run, "/bin/tool/x.sh") == "x.sh"  # as the old lookup had it
    assert index.source(stage, run, "/w") is None


def test_a_directory_fills_below_it_only_with_what_it_holds(tmp_path: Path) -> None:
    build, index = _index(
        tmp_path,
        "FROM python:3.12\nCOPY req.txt /srv/req.txt\nCOPY app /srv\nCOPY tools/ /srv/tools/\n"
        "RUN true\n",
    )
    stage, run = build.stages[0], build.stages[0].instructions[-1]
    assert index.source(stage, run, "/srv/main.py") == "app/main.py"
    # app/ holds a req.txt too, and it came later: it wins over the file copied first.
    assert index.source(stage, run, "/srv/req.txt") == "app/req.txt"
    assert index.source(stage, run, "/srv/tools/run.sh") == "tools/run.sh"
    # Neither directory holds it: the older copy of another path does not fill it either.
    assert index.source(stage, run, "/srv/nothing.txt") is None


def test_a_later_directory_without_the_file_leaves_the_earlier_copy(tmp_path: Path) -> None:
    build, index = _index(
        tmp_path, "FROM python:3.12\nCOPY other.txt /srv/run.sh\nCOPY app /srv\nRUN true\n"
    )
    stage, run = build.stages[0], build.stages[0].instructions[-1]
    assert index.source(stage, run, "/srv/run.sh") == "other.txt"


def test_a_stage_sees_its_from_chain_not_other_stages(tmp_path: Path) -> None:
    build, index = _index(
        tmp_path,
        "FROM python:3.12 AS base\nCOPY req.txt /r.txt\n"
        "FROM python:3.12 AS other\nCOPY other.txt /o.txt\n"
        "FROM base AS mid\nCOPY x.sh /x.sh\n"
        "FROM mid AS final\nRUN true\n",
    )
    final = build.stages[3]
    run = final.instructions[-1]
    assert index.source(final, run, "/r.txt") == "req.txt"
    assert index.source(final, run, "/x.sh") == "x.sh"
    assert index.source(final, run, "/o.txt") is None
    # A COPY --from is not a copy from the context.
    build, index = _index(
        tmp_path, "FROM python:3.12 AS a\nCOPY req.txt /r.txt\nFROM a\nCOPY --from=a /r.txt /z\n"
    )
    last = build.stages[1]
    assert index.source(last, last.instructions[-1], "/z") is None
