"""The files of the build context below a path, as the COPY checks ask for them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from gpuship.limits import DEFAULT_LIMITS
from gpuship.lint.context import BuildContext, context_relative

# Names beside the "/" that ends a directory: "!", "-" and "." sort before it, "0" after.
FILES = (
    "a!b",
    "a-b/x",
    "a.txt",
    "a/b/c/d.bin",
    "a/b!/e",
    "a/b-c",
    "a/b0",
    "a/b.txt",
    "a0",
    "a00",
    "ab/c",
    "src/d1/f",
    "src/d1/g/h",
    "src/d10/f",
    "src/d1.pt",
)


def test_files_under_a_path_are_those_below_it_in_the_walks_order(tmp_path: Path) -> None:
    for name in FILES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(name)
    (tmp_path / ".dockerignore").write_text("a00\n")
    context = BuildContext(tmp_path, tmp_path / "Dockerfile")
    walked = [f.path for f in context.files_under(".")]
    assert sorted(walked) == sorted({*FILES, ".dockerignore"} - {"a00"})
    asked = [*walked, "a", "a/", "a/b", "a/b/c", "src", "src/d1", "./src/../a", "a!", "x"]
    for path in asked:
        normal = context_relative(path)
        below = [f for f in walked if f == normal or f.startswith(normal + "/")]
        assert [f.path for f in context.files_under(path)] == below, path
    assert [f.path for f in context.files_under("src/d1")] == [
        f for f in walked if f in ("src/d1/f", "src/d1/g/h")
    ]


def test_an_ignore_file_linked_out_of_the_context_is_not_read(tmp_path: Path) -> None:
    # e.g. `.dockerignore -> ~/.docker/config.json`: its lines, invalid patterns, would be
    # quoted in GSL004 findings, which SARIF takes to code scanning.
    secret = tmp_path / "secret"
    secret.write_text("[token-z-a]\n")
    for context, ignore in (
        (tmp_path / "ctx", tmp_path / "ctx" / ".dockerignore"),
        (tmp_path / "other", tmp_path / "other" / "Dockerfile.dockerignore"),
    ):
        context.mkdir()
        ignore.symlink_to(secret)
        rules = BuildContext(context, context / "Dockerfile").ignore
        assert rules.patterns == ()
        (problem,) = rules.problems
        assert problem.limit and "symbolic link out of the build context" in problem.message
        assert "token" not in problem.message


def test_a_file_is_read_once_and_a_refused_one_is_still_reported_at_each_read(
    tmp_path: Path,
) -> None:
    # Four rules read each requirements file a RUN installs from: the context is read as the
    # builder sends it, once (a file changed afterwards reads as it was), while a file a limit
    # refused is recorded as unread at every read, as it was when each read opened it.
    (tmp_path / "requirements.txt").write_text("numpy==2.0\n")
    (tmp_path / "big.txt").write_text("x" * 100)
    limits = dataclasses.replace(DEFAULT_LIMITS, context_file_max_bytes=50)
    context = BuildContext(tmp_path, tmp_path / "Dockerfile", limits)
    assert context.read_text("requirements.txt") == "numpy==2.0\n"
    (tmp_path / "requirements.txt").write_text("torch==2.4.0\n")
    assert context.read_text("requirements.txt") == "numpy==2.0\n"
    assert context.read_text("big.txt") is None
    assert context.read_text("big.txt") is None
    assert [u.path for u in context.unread] == ["big.txt", "big.txt"]
