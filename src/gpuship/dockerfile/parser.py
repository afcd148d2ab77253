"""BuildKit's Dockerfile parser (`frontend/dockerfile/parser`), in Python, in linear time.

The result is what BuildKit's `parser.Parse` builds: one node per instruction with its command
word as written, `--flags`, values, JSON form, heredocs and first/last line; errors are
BuildKit's, word for word. The rules reproduced here, from BuildKit's Go source:

- Lines end at `\\n` only; trailing `\\r`s are dropped; a line over 65,535 bytes stops the scan
  (Go's `bufio.Scanner` limit). A leading BOM is dropped from the first line.
- Parser directives (`# escape=`, `# syntax=`) count only before the first other line; the
  escape character (`\\` or a backtick) continues a line when it is the last non-blank one
  and is not itself escaped. Comment lines and blank lines inside a continuation are skipped.
- RUN/COPY/ADD (and ONBUILD of them) in shell form read heredoc bodies after the line.

Each node also records where each piece of its joined text came from (`segments`), so a
finding can point at a column: BuildKit keeps lines, not columns.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

from gpuship.dockerfile import gostr, jsonarray, shellwords, words
from gpuship.errors import InputError

# bufio.MaxScanTokenSize (64 KiB) holds a line and its newline.
MAX_LINE_BYTES = 64 * 1024 - 1
# Our limits, not BuildKit's: a Dockerfile larger than this is not one anyone maintains (the
# largest in the wild are a few hundred KiB), and instructions plus comment lines are what
# memory and rule time grow with. Readers refuse bigger files before parsing.
MAX_DOCKERFILE_BYTES = 16 * 1024 * 1024
MAX_NODES = 200_000
_GO_BLANKS = "\t\n\f\r "  # Go regexp's \s
_DIRECTIVE = re.compile(r"#[\t\n\f\r ]*([a-zA-Z][a-zA-Z0-9]*)[\t\n\f\r ]*=(.*)\Z")
_HEREDOC_WORD = re.compile(r"([0-9]*)<<(-?)([^<]*)\Z")
_HEREDOC_COMMANDS = frozenset(("add", "copy", "run"))
_MAX_FD = (1 << 64) - 1


class DockerfileSyntaxError(InputError):
    """BuildKit would refuse this Dockerfile; `message` is BuildKit's own wording."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


class DockerfileTooLarge(InputError):
    """More instructions and comment lines than the caller's limit (BuildKit has none)."""

    def __init__(self, limit: int, line: int) -> None:
        super().__init__(f"more than {limit} instructions and comment lines (the limit)")
        self.line = line


@dataclass(frozen=True, slots=True)
class HeredocNode:
    """A here-document in the parse tree: its name, body as written (with line ends) and first
    body line (`source.Heredoc` is the view lint reads, its body mapped to the file)."""

    name: str
    file_descriptor: int
    expand: bool
    chomp: bool
    content: str
    first_line: int


@dataclass(frozen=True, slots=True)
class Node:
    """One instruction. For ONBUILD, `sub` is the instruction it wraps and `values` is empty.

    `segments` maps `original` back to the file: (offset in `original`, line, column), one per
    physical line that contributed, columns 1-based in characters.
    """

    keyword: str
    flags: tuple[str, ...]
    values: tuple[str, ...]
    json: bool
    original: str
    start_line: int
    end_line: int
    heredocs: tuple[HeredocNode, ...] = ()
    sub: Node | None = None
    segments: tuple[tuple[int, int, int], ...] = ()


@dataclass(frozen=True, slots=True)
class CommentNode:
    """A comment line between instructions in the parse tree; `text` follows the `#` as
    written (`source.Comment` holds it stripped)."""

    line: int
    column: int
    text: str


@dataclass(frozen=True, slots=True)
class Dockerfile:
    """A parsed Dockerfile: its instructions, the comment lines between them, the escape."""

    nodes: tuple[Node, ...]
    comments: tuple[CommentNode, ...]
    escape: str


def parse(source: str, *, limit: int | None = MAX_NODES) -> Dockerfile:
    """Parse Dockerfile text as BuildKit does; `DockerfileSyntaxError` where BuildKit fails.

    `limit` bounds the instructions and comment lines kept (`DockerfileTooLarge` past it), so
    memory stays proportional to it whatever the file holds; None: no bound.
    """
    return _Parser(source, limit).run()


class _Lines:
    """bufio.Scanner with BuildKit's line splitter: each line keeps its `\\n`.

    Lines are cut one at a time, so memory stays at what the caller keeps.
    """

    def __init__(self, source: str) -> None:
        self._source = source
        self._pos = 0
        self.too_long = False

    def scan(self) -> str | None:
        source, pos = self._source, self._pos
        if self.too_long or pos >= len(source):
            return None
        newline = source.find("\n", pos)
        end = len(source) if newline < 0 else newline
        if (end - pos) * 4 > MAX_LINE_BYTES and len(
            source[pos:end].encode("utf-8", "surrogatepass")
        ) > MAX_LINE_BYTES:
            self.too_long = True
            return None
        self._pos = end + 1 if newline >= 0 else end
        return source[pos : self._pos]


class _Parser:
    def __init__(self, source: str, limit: int | None) -> None:
        self.lines = _Lines(source)
        self.limit = limit
        self.line = 0  # the number of the last line read
        self.escape = "\\"
        self.directives_done = False
        self.directives_seen: set[str] = set()

    def run(self) -> Dockerfile:
        nodes: list[Node] = []
        comments: list[CommentNode] = []
        while (token := self.lines.scan()) is not None:
            if self.line == 0 and token.startswith("\ufeff"):
                token = token[1:]
            text = token.rstrip("\r\n")
            stripped = text.lstrip(gostr.SPACE)
            column = len(text) - len(stripped) + 1
            self._directive(stripped)
            self.line += 1
            if stripped.startswith("#"):
                comments.append(CommentNode(self.line, column, stripped[1:]))
            else:
                line, ended = _trim_continuation(stripped, self.escape)
                if ended and not line:
                    continue
                nodes.append(self._instruction(line, ended, column))
            if self.limit is not None and len(nodes) + len(comments) > self.limit:
                raise DockerfileTooLarge(self.limit, self.line)
        if not nodes:
            raise DockerfileSyntaxError("file with no instructions", max(self.line, 1))
        if self.lines.too_long:
            raise DockerfileSyntaxError(
                f"dockerfile line greater than max allowed size of {MAX_LINE_BYTES}",
                self.line + 1,
            )
        return Dockerfile(tuple(nodes), tuple(comments), self.escape)

    def _directive(self, text: str) -> None:
        """DirectiveParser.ParseLine: directives end at the first line that is not one."""
        if self.directives_done:
            return
        found = _DIRECTIVE.match(text)
        key = found.group(1).lower() if found else ""
        value = _directive_value(found.group(2)) if found else None
        if value is None or key not in ("syntax", "escape"):
            self.directives_done = True
            return
        if key in self.directives_seen:
            raise DockerfileSyntaxError(
                f"only one {key} parser directive can be used", self.line + 1
            )
        self.directives_seen.add(key)
        if key == "escape":
            if value not in ("`", "\\"):
                raise DockerfileSyntaxError(
                    f"invalid escape token '{value}' does not match ` or \\", self.line + 1
                )
            self.escape = value

    def _instruction(self, first: str, ended: bool, column: int) -> Node:
        start = self.line
        line, segments = (first, ((0, start, column),)) if ended else self._joined(first, column)
        try:
            keyword, flags, values, json_form, sub, heredocs_ok = _command(line, self.escape)
        except (jsonarray.NotStringArray, _NodeError) as exc:
            raise DockerfileSyntaxError(str(exc), start) from None
        heredocs = self._heredocs(line, start) if heredocs_ok else ()
        return Node(
            keyword, flags, values, json_form, line, start, self.line, heredocs, sub, segments
        )

    def _joined(self, first: str, column: int) -> tuple[str, tuple[tuple[int, int, int], ...]]:
        """The continuation lines after `first`, joined as BuildKit joins them, and their map."""
        parts = [first]
        segments = [(0, self.line, column)]
        offset = len(first)
        ended = False
        while not ended and (token := self.lines.scan()) is not None:
            text = token.rstrip("\r\n")
            self._directive(text)
            self.line += 1
            if text.lstrip(gostr.SPACE).startswith("#") or not text.strip(gostr.SPACE):
                continue  # comment or empty continuation line
            piece, ended = _trim_continuation(text, self.escape)
            segments.append((offset, self.line, 1))
            parts.append(piece)
            offset += len(piece)
        return "".join(parts), tuple(segments)

    def _heredocs(self, line: str, start: int) -> tuple[HeredocNode, ...]:
        try:
            found = _heredocs_in(line)
        except (shellwords.LexError, _NodeError) as exc:
            raise DockerfileSyntaxError(str(exc), start) from None
        return tuple(self._body(header, start) for header in found)

    def _body(self, header: HeredocNode, start: int) -> HeredocNode:
        """The heredoc's lines up to its terminator (leading tabs ignored with `<<-`)."""
        first = self.line + 1
        body: list[str] = []
        while (token := self.lines.scan()) is not None:
            self.line += 1
            candidate = token.rstrip("\r\n")
            if (candidate.lstrip("\t") if header.chomp else candidate) == header.name:
                return replace(header, content="".join(body), first_line=first)
            body.append(token)
        raise DockerfileSyntaxError("unterminated heredoc", start)


class _NodeError(ValueError):
    """An instruction's arguments BuildKit rejects."""


def _directive_value(tail: str) -> str | None:
    """The value `\\s*(.+?)\\s*$` captures from the text after `=`; None: no match."""
    value = tail.lstrip(_GO_BLANKS).rstrip(_GO_BLANKS)
    if value:
        return value
    return tail[-1] if tail else None


def _trim_continuation(text: str, escape: str) -> tuple[str, bool]:
    """trimContinuationCharacter: (text without the escape, whether the instruction ended)."""
    stripped = text.rstrip(" \t")
    if stripped.endswith(escape) and (len(stripped) == 1 or stripped[-2] != escape):
        return stripped[:-1], False
    return text, True


_Command = tuple[str, tuple[str, ...], tuple[str, ...], bool, "Node | None", bool]


def _command(line: str, escape: str) -> _Command:
    """newNodeFromLine: (keyword, flags, values, JSON form, wrapped instruction, whether it can
    hold heredocs). ONBUILD nesting is unrolled so no depth overflows the stack."""
    wrappers: list[tuple[str, tuple[str, ...], str]] = []
    while True:
        keyword, flags, rest = words.split_command(line)
        lowered = gostr.lower(keyword)
        if lowered != "onbuild" or not rest:
            break
        wrappers.append((keyword, tuple(flags), line))
        line = rest
    values, json_form = _DISPATCH.get(lowered, _ignore)(rest, escape)
    # canContainHeredoc: RUN/COPY/ADD in shell form, or an ONBUILD of one.
    heredocs_ok = lowered in _HEREDOC_COMMANDS and not json_form and len(wrappers) <= 1
    if not wrappers:
        return keyword, tuple(flags), values, json_form, None, heredocs_ok
    sub = Node(keyword, tuple(flags), values, json_form, line, 0, 0)
    for keyword, flags_, original in reversed(wrappers[1:]):
        sub = Node(keyword, flags_, (), False, original, 0, 0, sub=sub)
    keyword, flags_, _ = wrappers[0]
    return keyword, flags_, (), False, sub, heredocs_ok


_Values = tuple[tuple[str, ...], bool]


def _ignore(rest: str, escape: str) -> _Values:
    # An unknown instruction keeps one empty value, as BuildKit's parseIgnore does.
    return ("",), False


def _empty_onbuild(rest: str, escape: str) -> _Values:
    return (), False  # parseSubCommand of nothing: no wrapped instruction, no values


def _json(rest: str) -> list[str] | None:
    text = rest.lstrip(gostr.SPACE)
    return jsonarray.string_array(text) if text.startswith("[") else None


def _maybe_json(rest: str, escape: str) -> _Values:
    if not rest:
        return (), False
    found = _json(rest)
    return (tuple(found), True) if found is not None else ((rest,), False)


def _maybe_json_to_list(rest: str, escape: str) -> _Values:
    found = _json(rest)
    return (tuple(found), True) if found is not None else (words.split_whitespace(rest), False)


def _string(rest: str, escape: str) -> _Values:
    return ((rest,) if rest else ()), False


def _whitespace_delimited(rest: str, escape: str) -> _Values:
    return words.split_whitespace(rest), False


def _name_or_name_value(rest: str, escape: str) -> _Values:
    return tuple(words.words(rest, escape)), False


def _name_value(key: str) -> Callable[[str, str], _Values]:
    def parse_name_value(rest: str, escape: str) -> _Values:
        found = words.words(rest, escape)
        if not found:
            return (), False
        if "=" not in found[0]:  # the old `KEY name value` form
            parts = words.WHITESPACE.split(rest, maxsplit=1)
            if len(parts) < 2:
                raise _NodeError(f"{key} must have two arguments")
            return (parts[0], parts[1]), False
        values: list[str] = []
        for word in found:
            if "=" not in word:
                raise _NodeError(
                    f"Syntax error - can't find = in {gostr.quote(word)}. "
                    "Must be of the form: name=value"
                )
            values.extend(word.split("=", 1))
        return tuple(values), False

    return parse_name_value


def _health(rest: str, escape: str) -> _Values:
    kind, command = words.health_type(rest)
    if not kind:
        return (), False
    values, json_form = _maybe_json(command, escape)
    return (kind, *values), json_form


_DISPATCH: dict[str, Callable[[str, str], _Values]] = {
    "add": _maybe_json_to_list,
    "arg": _name_or_name_value,
    "cmd": _maybe_json,
    "copy": _maybe_json_to_list,
    "entrypoint": _maybe_json,
    "env": _name_value("ENV"),
    "expose": _whitespace_delimited,
    "from": _whitespace_delimited,
    "healthcheck": _health,
    "label": _name_value("LABEL"),
    "maintainer": _string,
    "onbuild": _empty_onbuild,
    "run": _maybe_json,
    "shell": _maybe_json,
    "stopsignal": _string,
    "user": _string,
    "volume": _maybe_json_to_list,
    "workdir": _string,
}


def _heredocs_in(line: str) -> list[HeredocNode]:
    """heredocsFromLine: each `<<WORD` of the line, in order, its body still to be read."""
    if "<<" not in line:  # the lexer only ever keeps characters, so no "<<", no heredoc
        return []
    try:
        found = shellwords.process_words(line, raw_quotes=True, raw_escapes=True)
    except shellwords.LexError:
        return []  # BuildKit ignores this lexer's errors
    docs = []
    for word in found:
        doc = _heredoc_word(word)
        if doc is not None:
            docs.append(doc)
    return docs


def _heredoc_word(word: str) -> HeredocNode | None:
    """ParseHeredoc of one word; lexer errors of its name are errors of the instruction."""
    match = _HEREDOC_WORD.match(word)
    if match is None or not match.group(3):
        return None
    digits, chomp, rest = match.group(1), match.group(2) == "-", match.group(3)
    names = shellwords.process_words(rest, raw_quotes=False, raw_escapes=False)
    if len(names) != 1:
        return None
    raw = shellwords.process_words(rest, raw_quotes=True, raw_escapes=False)
    if len(raw) != len(names):
        raise _NodeError(f"internal lexing of heredoc produced inconsistent results: {rest}")
    quotes = names[0].count("'") + names[0].count('"')
    raw_quotes = raw[0].count("'") + raw[0].count('"')
    return HeredocNode(names[0], _parse_uint(digits), quotes == raw_quotes, chomp, "", 0)


def _parse_uint(digits: str) -> int:
    """strconv.ParseUint with its error ignored: 0 when empty, the maximum on overflow."""
    significant = digits.lstrip("0")
    if not digits:
        return 0
    if len(significant) > 20:
        return _MAX_FD
    return min(int(significant or "0"), _MAX_FD)
