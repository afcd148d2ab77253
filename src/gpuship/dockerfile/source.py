"""Read a Dockerfile into instructions that know where every character came from.

The file is split by `parser`, BuildKit's parser written in Python (instruction boundaries,
flags, JSON vs shell form, heredocs, the `escape` directive, BuildKit's errors), so a file
splits exactly as `docker build` splits it, on every platform. This module turns that tree
into the view lint and build read: each instruction's joined text with a map from every
offset back to a (line, column) of the file, so a finding can point at the offending token,
and the comment lines, where pragmas live.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from pathlib import Path

from gpuship.dockerfile import (
    MAX_DOCKERFILE_BYTES,
    MAX_NODES,
    Dockerfile,
    DockerfileSyntaxError,
    DockerfileTooLarge,
    HeredocNode,
    Node,
    parse,
)

_KNOWN = frozenset(
    [
        "ADD",
        "ARG",
        "CMD",
        "COPY",
        "ENTRYPOINT",
        "ENV",
        "EXPOSE",
        "FROM",
        "HEALTHCHECK",
        "LABEL",
        "MAINTAINER",
        "ONBUILD",
        "RUN",
        "SHELL",
        "STOPSIGNAL",
        "USER",
        "VOLUME",
        "WORKDIR",
    ]
)


@dataclass(frozen=True)
class SourceMap:
    """Maps offsets of a derived text back to 1-based (line, column) of the file.

    `segments` holds (offset, line, column) for each run of characters copied verbatim from
    one source line, sorted by offset.
    """

    segments: tuple[tuple[int, int, int], ...]

    def position(self, offset: int) -> tuple[int, int]:
        """The (line, column) of the character at `offset`."""
        if not self.segments:
            return (1, 1)
        index = bisect.bisect_right(self.segments, (offset, 1 << 62, 0)) - 1
        start, line, column = self.segments[max(index, 0)]
        return (line, column + max(offset - start, 0))

    def shifted(self, delta: int) -> SourceMap:
        """The map of a substring that starts `delta` characters into this text."""
        kept: list[tuple[int, int, int]] = []
        for start, line, column in self.segments:
            if start <= delta:
                kept = [(0, line, column + delta - start)]
            else:
                kept.append((start - delta, line, column))
        return SourceMap(tuple(kept))


@dataclass(frozen=True)
class Span:
    """A 1-based region of the file."""

    line: int
    column: int
    end_line: int
    end_column: int


@dataclass(frozen=True)
class Text:
    """A piece of text (shell script, argument) with its map back to the file."""

    value: str
    source: SourceMap

    def span(self, start: int, end: int) -> Span:
        """The file region of `value[start:end]`."""
        line, column = self.source.position(start)
        end_line, end_column = self.source.position(max(end - 1, start))
        return Span(line, column, end_line, end_column + 1)

    def sub(self, start: int, end: int | None = None) -> Text:
        """The substring `value[start:end]` with its own map."""
        return Text(self.value[start:end], self.source.shifted(start))


@dataclass(frozen=True)
class Heredoc:
    """A here-document attached to an instruction (`RUN <<EOF`, `COPY <<EOF /dst`)."""

    name: str
    body: Text


@dataclass(frozen=True)
class Instruction:
    """One Dockerfile instruction as BuildKit parsed it, plus its source text map."""

    index: int
    keyword: str
    sub_keyword: str | None
    flags: tuple[str, ...]
    args: tuple[str, ...]
    json_form: bool
    heredocs: tuple[Heredoc, ...]
    start_line: int
    end_line: int
    text: Text  # the logical header text, continuations joined, e.g. "RUN pip install x"

    @property
    def span(self) -> Span:
        """The keyword of the instruction."""
        return self.locate(self.keyword)

    def locate(self, needle: str, after: int = 0) -> Span:
        """The file region of the first `needle` in the header text at or after `after`.

        Falls back to the instruction's keyword when the needle is not in the text (e.g. a
        value BuildKit normalised).
        """
        offset = self.text.value.find(needle, after) if needle else -1
        if offset < 0:
            offset = max(self.text.value.upper().find(self.keyword), 0)
            return self.text.span(offset, offset + len(self.keyword))
        return self.text.span(offset, offset + len(needle))

    def flag(self, name: str) -> str | None:
        """The value of `--name=value` (last one wins), or None."""
        value = None
        for flag in self.flags:
            if flag.startswith(f"--{name}="):
                value = flag.split("=", 1)[1]
            elif flag == f"--{name}":
                value = ""
        return value

    def flag_values(self, name: str) -> list[str]:
        """Every value of a repeatable flag such as `--mount`."""
        return [f.split("=", 1)[1] for f in self.flags if f.startswith(f"--{name}=")]

    @property
    def body_offset(self) -> int:
        """Offset in `text` just past the keyword and flags: where the arguments begin."""
        value = self.text.value
        offset = max(value.upper().find(self.sub_keyword or self.keyword), 0)
        offset += len(self.sub_keyword or self.keyword)
        for flag in self.flags:
            found = value.find(flag, offset)
            if found >= 0:
                offset = found + len(flag)
        while offset < len(value) and value[offset] in " \t":
            offset += 1
        return offset


@dataclass(frozen=True)
class Comment:
    """A comment line between instructions (pragmas live here)."""

    line: int
    column: int
    text: str  # without the leading '#', stripped


@dataclass(frozen=True)
class ParseProblem:
    """Why a file could not be read as a Dockerfile, and where."""

    message: str
    line: int = 1
    column: int = 1


@dataclass(frozen=True)
class ParsedDockerfile:
    """A Dockerfile's instructions and comments, or the problem that stopped parsing."""

    path: Path
    instructions: tuple[Instruction, ...] = ()
    comments: tuple[Comment, ...] = ()
    escape: str = "\\"
    problems: tuple[ParseProblem, ...] = field(default_factory=tuple)


def read_dockerfile(path: Path, *, max_bytes: int = MAX_DOCKERFILE_BYTES) -> ParsedDockerfile:
    """Read and parse `path`. Unreadable content becomes a `ParseProblem`, never an exception.

    A path that cannot be opened at all is the caller's concern (an `OSError` propagates).
    """
    with path.open("rb") as handle:
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        size = path.stat().st_size
        return ParsedDockerfile(
            path,
            problems=(ParseProblem(f"file is {size} bytes, over the {_human(max_bytes)} limit"),),
        )
    if b"\x00" in data[:8192]:
        return ParsedDockerfile(path, problems=(ParseProblem("binary file, not a Dockerfile"),))
    try:
        source = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        return ParsedDockerfile(
            path,
            problems=(ParseProblem("not valid UTF-8 (BuildKit reads UTF-8)", line, column),),
        )
    return parse_dockerfile(source, path)


def _human(size: int) -> str:
    return f"{size // (1024 * 1024)} MiB" if size % (1024 * 1024) == 0 else f"{size} bytes"


def parse_dockerfile(source: str, path: Path, *, max_nodes: int = MAX_NODES) -> ParsedDockerfile:
    """Parse Dockerfile text; syntax errors and unknown instructions become `ParseProblem`s."""
    try:
        tree = parse(source, limit=max_nodes)
    except DockerfileSyntaxError as exc:
        return ParsedDockerfile(path, problems=(ParseProblem(exc.message, exc.line),))
    except DockerfileTooLarge as exc:
        return ParsedDockerfile(path, problems=(ParseProblem(str(exc), exc.line),))
    instructions = tuple(_instruction(index, node) for index, node in enumerate(tree.nodes))
    problems = tuple(
        ParseProblem(f"unknown instruction: {i.keyword}", i.span.line, i.span.column)
        for i in instructions
        if i.keyword not in _KNOWN
    )
    return ParsedDockerfile(
        path,
        instructions=instructions,
        comments=_comments(tree),
        escape=tree.escape,
        problems=problems,
    )


def _instruction(index: int, node: Node) -> Instruction:
    # ONBUILD wraps an instruction: its arguments and flags (`ONBUILD RUN --mount=...`) are the
    # wrapped one's; BuildKit keeps the heredocs (and the lines) on the ONBUILD itself.
    inner = node.sub if node.sub is not None else node
    return Instruction(
        index=index,
        keyword=node.keyword.upper(),
        sub_keyword=node.sub.keyword.upper() if node.sub is not None else None,
        flags=node.flags + inner.flags if node.sub is not None else node.flags,
        args=inner.values,
        json_form=inner.json,
        heredocs=tuple(_heredoc(h) for h in node.heredocs),
        start_line=node.start_line,
        end_line=node.end_line,
        text=Text(node.original, SourceMap(node.segments)),
    )


def _heredoc(heredoc: HeredocNode) -> Heredoc:
    segments: list[tuple[int, int, int]] = []
    offset = 0
    line = heredoc.first_line
    content = heredoc.content
    while offset < len(content):
        segments.append((offset, line, 1))
        newline = content.find("\n", offset)
        offset = len(content) if newline < 0 else newline + 1
        line += 1
    return Heredoc(heredoc.name, Text(content, SourceMap(tuple(segments))))


def _comments(tree: Dockerfile) -> tuple[Comment, ...]:
    return tuple(Comment(c.line, c.column, c.text.strip()) for c in tree.comments)
