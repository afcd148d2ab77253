"""Read a Dockerfile into instructions that know where every character came from.

Instruction boundaries, flags, JSON vs shell form, heredocs and the `escape` directive come
from BuildKit's own parser through the PyPI `dockerfile` package (Go bindings of
`moby/buildkit/frontend/dockerfile/parser`), so we split a file exactly as `docker build`
does. That parser reports lines but not columns, and drops comments. This module adds both:
it rebuilds each instruction's logical text (continuations joined the way BuildKit joins
them) together with a map from every offset back to a (line, column) of the file, so a
finding can point at the offending token, and it keeps the comment lines for pragmas.
"""

from __future__ import annotations

import bisect
import importlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from gpuship.errors import EnvironmentUnavailable

# A file larger than this is not a Dockerfile anyone maintains; refuse rather than stall.
MAX_DOCKERFILE_BYTES = 64 * 1024 * 1024
# BuildKit's parser slows quadratically with a heredoc's size (1 MiB: ~2 s, 4 MiB: ~23 s);
# a bigger body is reported instead of parsed.
MAX_HEREDOC_BYTES = 512 * 1024
_DIRECTIVE = re.compile(r"^#\s*([a-zA-Z][a-zA-Z0-9]*)\s*=\s*(.+?)\s*$")
_HEREDOC_HEADER = re.compile(r"<<(-?)\s*([\"']?)([A-Za-z_][A-Za-z0-9_]*)\2")
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


def read_dockerfile(path: Path) -> ParsedDockerfile:
    """Read and parse `path`. Unreadable content becomes a `ParseProblem`, never an exception.

    A path that cannot be opened at all is the caller's concern (an `OSError` propagates).
    """
    size = path.stat().st_size
    if size > MAX_DOCKERFILE_BYTES:
        return ParsedDockerfile(
            path, problems=(ParseProblem(f"file is {size} bytes, over the 64 MiB limit"),)
        )
    data = path.read_bytes()
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


def _buildkit_parser() -> ModuleType:
    """The `dockerfile` package, which publishes wheels for x86_64 Linux and Windows only."""
    try:
        return importlib.import_module("dockerfile")
    except ImportError:
        raise EnvironmentUnavailable(
            "Dockerfile parsing needs the 'dockerfile' package (BuildKit's parser), which has "
            "wheels for x86_64 Linux and Windows only; run gpuship lint on such a runner"
        ) from None


def parse_dockerfile(source: str, path: Path) -> ParsedDockerfile:
    """Parse Dockerfile text; syntax errors become `ParseProblem`s."""
    lines = source.splitlines()
    escape = _escape_directive(lines)
    oversized = _oversized_heredoc(lines)
    if oversized is not None:
        return ParsedDockerfile(path, escape=escape, problems=(oversized,))
    buildkit = _buildkit_parser()
    try:
        commands = buildkit.parse_string(source)
    except buildkit.GoParseError as exc:
        return ParsedDockerfile(path, escape=escape, problems=(_locate_problem(str(exc), lines),))
    instructions: list[Instruction] = []
    covered: list[tuple[int, int]] = []
    problems: list[ParseProblem] = []
    for index, command in enumerate(commands):
        instruction = _instruction(index, command, lines, escape)
        instructions.append(instruction)
        covered.append((instruction.start_line, instruction.end_line))
        if instruction.keyword not in _KNOWN:
            span = instruction.text.span(0, len(instruction.keyword))
            problems.append(
                ParseProblem(f"unknown instruction: {instruction.keyword}", span.line, span.column)
            )
    return ParsedDockerfile(
        path,
        instructions=tuple(instructions),
        comments=_comments(lines, covered),
        escape=escape,
        problems=tuple(problems),
    )


def _escape_directive(lines: list[str]) -> str:
    # Parser directives are only honoured at the very top, before any other line.
    for line in lines:
        match = _DIRECTIVE.match(line.strip())
        if not match:
            break
        if match.group(1).lower() == "escape" and match.group(2) in ("`", "\\"):
            return match.group(2)
    return "\\"


def _oversized_heredoc(lines: list[str]) -> ParseProblem | None:
    """A heredoc body over MAX_HEREDOC_BYTES, found by a linear scan before BuildKit runs."""
    number = 0
    while number < len(lines):
        line = lines[number]
        number += 1
        if "<<" not in line or line.lstrip().startswith("#"):
            continue
        for match in _HEREDOC_HEADER.finditer(line):
            name, strip = match.group(3), match.group(1) == "-"
            size = 0
            for end in range(number, len(lines)):
                body_line = lines[end]
                if (body_line.lstrip("\t") if strip else body_line) == name:
                    if size > MAX_HEREDOC_BYTES:
                        return ParseProblem(
                            f"heredoc <<{name} holds {size // 1024} KiB (over "
                            f"{MAX_HEREDOC_BYTES // 1024} KiB): put the data in a file of the "
                            "build context and COPY it",
                            number,
                            match.start() + 1,
                        )
                    number = end + 1
                    break
                size += len(body_line) + 1
    return None


def _locate_problem(message: str, lines: list[str]) -> ParseProblem:
    found = re.search(r"line (\d+)", message)
    if found:
        return ParseProblem(message, int(found.group(1)))
    if "heredoc" in message:
        for number in range(len(lines), 0, -1):
            if "<<" in lines[number - 1]:
                column = lines[number - 1].find("<<") + 1
                return ParseProblem(message, number, column)
    return ParseProblem(message)


def _continues(line: str, escape: str) -> tuple[bool, str]:
    stripped = line.rstrip(" \t")
    if stripped.endswith(escape):
        return True, stripped[: -len(escape)]
    return False, line


def _instruction(index: int, command: object, lines: list[str], escape: str) -> Instruction:
    cmd = command  # the `dockerfile.Command` namedtuple
    start: int = cmd.start_line  # type: ignore[attr-defined]
    end: int = cmd.end_line  # type: ignore[attr-defined]
    heredoc_values = tuple(cmd.heredocs)  # type: ignore[attr-defined]
    # Header: the first line plus its continuations. Heredoc bodies follow the header.
    parts: list[str] = []
    segments: list[tuple[int, int, int]] = []
    offset = 0
    number = start
    while number <= min(end, len(lines)):
        line = lines[number - 1]
        if number > start and (not line.strip() or line.lstrip().startswith("#")):
            number += 1
            continue
        more, kept = _continues(line, escape)
        segments.append((offset, number, 1))
        parts.append(kept)
        offset += len(kept)
        number += 1
        if not more:
            break
    header = Text("".join(parts), SourceMap(tuple(segments)))
    heredocs = _heredocs(header.value, heredoc_values, lines, number, end)
    return Instruction(
        index=index,
        keyword=str(cmd.cmd).upper(),  # type: ignore[attr-defined]
        sub_keyword=(str(cmd.sub_cmd).upper() if cmd.sub_cmd else None),  # type: ignore[attr-defined]
        flags=tuple(cmd.flags),  # type: ignore[attr-defined]
        args=tuple(cmd.value),  # type: ignore[attr-defined]
        json_form=bool(cmd.json),  # type: ignore[attr-defined]
        heredocs=heredocs,
        start_line=start,
        end_line=end,
        text=header,
    )


def _heredocs(
    header: str, values: tuple[object, ...], lines: list[str], first_body_line: int, end: int
) -> tuple[Heredoc, ...]:
    strip_tabs = {m.group(3): m.group(1) == "-" for m in _HEREDOC_HEADER.finditer(header)}
    result: list[Heredoc] = []
    number = first_body_line
    for value in values:
        name: str = value.name  # type: ignore[attr-defined]
        content: str = value.content  # type: ignore[attr-defined]
        segments: list[tuple[int, int, int]] = []
        offset = 0
        body_start = number
        while number <= min(end, len(lines)):
            line = lines[number - 1]
            marker = line.lstrip("\t") if strip_tabs.get(name) else line
            number += 1
            if marker == name:
                break
        # The body text is BuildKit's; its lines are the source lines after the header.
        for relative, body_line in enumerate(content.splitlines(keepends=True)):
            segments.append((offset, body_start + relative, 1))
            offset += len(body_line)
        result.append(Heredoc(name, Text(content, SourceMap(tuple(segments)))))
    return tuple(result)


def _comments(lines: list[str], covered: list[tuple[int, int]]) -> tuple[Comment, ...]:
    inside = bytearray(len(lines) + 2)
    for start, end in covered:
        for number in range(start, min(end, len(lines)) + 1):
            inside[number] = 1
    comments: list[Comment] = []
    for number, line in enumerate(lines, start=1):
        if inside[number]:
            continue
        stripped = line.lstrip()
        if stripped.startswith("#"):
            comments.append(Comment(number, len(line) - len(stripped) + 1, stripped[1:].strip()))
    return tuple(comments)
