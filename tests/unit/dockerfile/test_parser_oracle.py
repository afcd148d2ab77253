"""The pure-Python parser against BuildKit's own (the `dockerfile` wheel, x86_64 only).

Every Dockerfile the tests use, and random valid and invalid ones, must parse to the same
instructions, values, flags, heredoc bodies and lines, or fail with the same message. The
wheel flattens BuildKit's tree (`oracle_view` below does the same to ours) and stands in for
`docker build`'s parser at the version it was built from (BuildKit v0.12.5).

The short run here takes GPUSHIP_ORACLE_EXAMPLES examples (default 300); the recorded long
run is `bench/parser-oracle/run.sh`.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpuship.dockerfile.parser import Dockerfile, DockerfileSyntaxError, parse

pytestmark = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64"),
    reason="the `dockerfile` wheel (BuildKit's parser) is built for x86_64 only",
)
oracle: Any = pytest.importorskip("dockerfile")

REPO = Path(__file__).resolve().parents[3]
EXAMPLES = int(os.environ.get("GPUSHIP_ORACLE_EXAMPLES", "300"))
COUNTER = os.environ.get("GPUSHIP_ORACLE_COUNT_FILE")


def _c(text: str | None) -> str | None:
    """The wheel passes strings through C: a NUL ends them, and "" comes back as None."""
    return text.split("\0")[0] if text else None


def _text(text: str) -> str:
    """A string the wheel returns as "" rather than None."""
    return _c(text) or ""


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= (1 << 63) else value  # Go uint -> C long


def oracle_view(parsed: Dockerfile) -> tuple[Any, ...]:
    """Our tree flattened the way asottile/dockerfile flattens BuildKit's."""
    commands = []
    for node in parsed.nodes:
        inner = node.sub if node.sub is not None else node
        # The wheel reads heredocs from the wrapped instruction, where BuildKit keeps none.
        heredocs = node.heredocs if node.sub is None else ()
        original = node.original
        if heredocs:
            original += "\n" + "".join(h.content + h.name + "\n" for h in heredocs)
        commands.append(
            oracle.Command(
                cmd=_c(node.keyword),
                sub_cmd=_c(node.sub.keyword) if node.sub is not None else None,
                json=inner.json,
                original=_c(original),
                start_line=node.start_line,
                end_line=node.end_line,
                flags=tuple(_text(f) for f in node.flags),
                # A wrapped ONBUILD's value list is its one empty-valued child holder.
                value=("",) if inner.sub is not None else tuple(_text(v) for v in inner.values),
                heredocs=tuple(
                    oracle.Heredoc(_text(h.name), _signed(h.file_descriptor), _text(h.content))
                    for h in heredocs
                ),
            )
        )
    return tuple(commands)


def _strings(commands: tuple[Any, ...]) -> Iterator[str]:
    for command in commands:
        yield from (command.cmd or "", command.sub_cmd or "", command.original or "")
        yield from command.flags
        yield from command.value
        for heredoc in command.heredocs:
            yield from (heredoc.name, heredoc.content)


def outcomes(text: str) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """(BuildKit's outcome, ours): ("ok", commands), ("error", message) or ("not utf-8",)."""
    try:
        theirs: tuple[Any, ...] = ("ok", oracle.parse_string(text))
    except oracle.GoParseError as exc:
        theirs = ("error", str(exc))
    except UnicodeDecodeError:  # a Go string that is not UTF-8 cannot become a Python str
        theirs = ("not utf-8",)
    try:
        view = oracle_view(parse(text))
        ours: tuple[Any, ...] = ("ok", view)
        if any(0xDC80 <= ord(c) <= 0xDCFF for s in _strings(view) for c in s):
            ours = ("not utf-8",)
    except DockerfileSyntaxError as exc:
        ours = ("error", exc.message)
    return theirs, ours


def corpus() -> list[Path]:
    found = {p for p in (REPO / "tests").rglob("Dockerfile*") if p.is_file()}
    found |= {p for p in (REPO / "workflows-examples").rglob("Dockerfile*") if p.is_file()}
    return sorted(found)


def test_corpus_is_not_empty() -> None:
    assert len(corpus()) >= 20


@pytest.mark.parametrize("path", corpus(), ids=lambda p: str(p.relative_to(REPO)))
def test_corpus_parses_as_buildkit_does(path: Path) -> None:
    theirs, ours = outcomes(path.read_text(encoding="utf-8"))
    assert theirs[0] == "ok"
    assert ours == theirs


# --- random Dockerfiles -------------------------------------------------------------------

# Characters where Go and Python disagree, or where UTF-8 bytes 0x85/0xA0 hide in a character.
ODD = [
    "\u00a0",
    "\u0085",
    "\u2028",
    "\u3000",
    "\x1c",
    "\x0b",
    "\x0c",
    "\r",
    "\ufeff",
    "\u0160",
    "\u0105",
    "\u2801",
    "\u00e9",
    "\u2603",
    "\u0130",
    "\u212a",
    "\U0001f600",
    "\u00ad",
]
SPACES = [" ", "  ", "\t", " \t ", "\u00a0", "\u3000", "\x0b", "\x0c"]
KEYWORDS = [
    "FROM",
    "RUN",
    "CMD",
    "LABEL",
    "MAINTAINER",
    "EXPOSE",
    "ENV",
    "ADD",
    "COPY",
    "ENTRYPOINT",
    "VOLUME",
    "USER",
    "WORKDIR",
    "ARG",
    "ONBUILD",
    "STOPSIGNAL",
    "HEALTHCHECK",
    "SHELL",
    "run",
    "Copy",
    "oNbUiLd",
    "FROMX",
    "WOR\u212aDIR",
    "MA\u0130NTAINER",
    "#",
    "--",
    "\\",
]
FLAGS = [
    "--from=build",
    "--mount=type=cache,target=/root/.cache",
    "--chmod=755",
    "--link",
    '--a="b c"',
    "--a='x y'",
    "--",
    "--a\\ b",
    '--x=""',
    '--q="\\""',
    "--t=\\",
    "--\u0160x",
    "--\u2801y=z",
    "--platform=$BUILDPLATFORM",
    "-x",
    "--network=none",
    "--a=\u00a0b",
]
WORDS = [
    "a",
    "b",
    "/dst/",
    ".",
    "x=1",
    "x=",
    "=y",
    'k="v w"',
    "k='v w'",
    "$X",
    "${X}",
    "${X:-d}",
    "${X:+a b}",
    "${X?e}",
    "${X",
    "${}",
    "${:x}",
    "${X:}",
    "$1",
    "$@",
    "${X!y}",
    "'q'",
    '"q"',
    '"unterminated',
    "'unterminated",
    "\\",
    "\\\\",
    "\\$X",
    "`",
    "``",
    "a\\ b",
    "<<EOF",
    "<<-EOF",
    '<<"EOF"',
    "<<'EOF'",
    "3<<EOF",
    "<<E\\OF",
    "<<EOF>file",
    "<<",
    "<<-",
    "<<''",
    '<<"E F"',
    "<<${X:-a b}",
    "<<$X",
    "cat<<EOF",
    "<<EOF<<X",
    "99999999999999999999999<<EOF",
    "<<'EOF",
    '<<"EOF',
    "<<\\",
    '"${X"',
    "&&",
    "|",
    ">",
    "#",
    "# c",
    "#!x",
    "AS",
    "as",
    "CMD",
    "NONE",
    "--x",
    "--",
    '["a"]',
    '["a", "b"]',
    "[1]",
    "[]",
    '["a",]',
    '["a"] tail',
    '[["a"]]',
    '[{"k": 1}]',
    '["\\u0000x"]',
    '["\\ud800"]',
    "[1e400]",
    '["a", 1e999]',
    "[null]",
    "[true]",
    '["\\"q"]',
    "[",
    "]",
    '{"a": "b"}',
    "\u00e9",
    "\u2603",
]
HEREDOC_NAMES = ["EOF", "X", "E F", "EOF\r", "\tEOF", "eof"]
BODY_LINES = ["echo hi", "", "  x", "\tEOF", "EOF", "# comment", "X", "\\", "a \\", "$X ${Y}"]
DIRECTIVES = [
    "# escape=`",
    "# escape=\\",
    "#escape=`",
    "# ESCAPE = ` ",
    "# escape=x",
    "# escape=",
    "# escape= ",
    "# syntax=docker/dockerfile:1",
    "#syntax=x",
    "# foo=bar",
    "# directive",
    "  # escape=`",
    "# escape=``",
]
ENDINGS = ["\n", "\n", "\n", "\r\n", "\r\r\n", " \\\n", "\\\n", "`\n", "\\ \t\n", "\\\\\n", "\n\n"]


KEYWORD = st.sampled_from(KEYWORDS)
FLAG_LIST = st.lists(st.sampled_from(FLAGS), max_size=3)
WORD_LIST = st.lists(st.sampled_from(WORDS + ODD), max_size=6)
SPACE = st.sampled_from(SPACES)
INDENT = st.sampled_from(["", "", " ", "\t", "\u00a0"])
BODY = st.lists(st.sampled_from(BODY_LINES), max_size=4)
HEREDOC_END = st.sampled_from(["", *HEREDOC_NAMES])
DIRECTIVE_LIST = st.lists(st.sampled_from(DIRECTIVES), max_size=3)
DIRECTIVE_END = st.sampled_from(["\n", "\r\n", "\n\n"])
BLANK_OR_COMMENT = st.sampled_from(["# comment", "  # indented", "#", "", "   ", "\t"])
NOISE = st.text(st.sampled_from([*ODD, *"ab <$'\"\\`#-=[]{}\n"]), max_size=30)
ENDING = st.sampled_from(ENDINGS)
SMALL = st.integers(0, 9)


@st.composite
def instruction_lines(draw: st.DrawFn) -> str:
    """One instruction-ish line: keyword, flags and words with blanks between."""
    parts = [draw(KEYWORD)]
    if parts[0].upper() == "ONBUILD" and draw(st.booleans()):
        parts.append(draw(KEYWORD))
    parts += draw(FLAG_LIST) + draw(WORD_LIST)
    line = ""
    for part in parts:
        line += part + (draw(SPACE) if draw(SMALL) else "")
    return draw(INDENT) + (line.rstrip(" ") if draw(st.booleans()) else line)


HEREDOC_KEYWORD = st.sampled_from(["RUN", "COPY", "ADD", "ONBUILD RUN", "run", "ONBUILD COPY"])
HEREDOC_PREFIX = st.sampled_from(
    ["", "", "3", "0", "-", "2-", "18446744073709551615", "18446744073709551616", "0" * 30 + "7"]
)
HEREDOC_NAME = st.sampled_from(["EOF", "X", "'EOF'", '"EOF"', "E'O'F", "\\EOF", "$N", "E\u00e9"])
TERMINATOR = st.sampled_from(["{}", "\t{}", "\t\t{}", "{}\r", "{} ", " {}", "{}x", ""])


@st.composite
def heredoc_instructions(draw: st.DrawFn) -> str:
    """RUN/COPY/ADD with one or two heredocs, each followed by a body and a terminator."""
    names = [(draw(HEREDOC_PREFIX), draw(HEREDOC_NAME)) for _ in range(draw(st.integers(1, 2)))]
    words = [
        f"{p[:-1] if p.endswith('-') else p}<<{'-' if p.endswith('-') else ''}{n}" for p, n in names
    ]
    out = draw(HEREDOC_KEYWORD) + " " + " ".join(words + draw(WORD_LIST)[:2]) + "\n"
    for _, name in names:
        bare = name.strip("'\"").replace("'", "").replace("\\", "")
        out += "".join(line + "\n" for line in draw(BODY))
        out += draw(TERMINATOR).format(bare) + "\n"
    return out


@st.composite
def dockerfiles(draw: st.DrawFn) -> str:
    """Directives, instructions with continuations, comments and heredoc bodies, and noise."""
    out = "\ufeff" if draw(SMALL) == 0 and draw(st.booleans()) else ""
    for directive in draw(DIRECTIVE_LIST):
        out += directive + draw(DIRECTIVE_END)
    for _ in range(draw(SMALL)):
        kind = draw(SMALL)
        if kind == 0:
            out += draw(BLANK_OR_COMMENT)
        elif kind == 1:
            out += "".join(line + "\n" for line in draw(BODY)) + draw(HEREDOC_END)
        elif kind == 2:
            out += draw(NOISE)
        elif kind == 3:
            out += draw(heredoc_instructions())
        else:
            out += draw(instruction_lines())
        out += draw(ENDING)
    return out.rstrip("\n") if draw(st.booleans()) else out


def _count() -> None:
    if COUNTER:
        path = Path(COUNTER)
        path.write_text(str(int(path.read_text() or "0") + 1) if path.exists() else "1")


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(dockerfiles())
def test_random_dockerfiles_parse_as_buildkit_does(text: str) -> None:
    _count()
    theirs, ours = outcomes(text)
    assert ours == theirs


@settings(max_examples=max(EXAMPLES // 3, 50), deadline=None, database=None)
@given(st.text(st.sampled_from([*ODD, *"RUN COPY<<EOF\n\\`#=\"'$[]{},:1-"]), max_size=80))
def test_random_text_parses_as_buildkit_does(text: str) -> None:
    _count()
    theirs, ours = outcomes(text)
    assert ours == theirs


def test_long_lines_fail_where_buildkit_fails() -> None:
    for size in (65_534, 65_535, 65_536):
        for text in (
            "FROM a\nRUN " + "x" * (size - 4) + "\n",
            "FROM a\nRUN " + "x" * (size - 4),
            "RUN " + "\u00e9" * ((size - 4) // 2) + "x" * ((size - 4) % 2) + "\nFROM a\n",
        ):
            theirs, ours = outcomes(text)
            assert ours == theirs, size


def test_syntax_error_location_is_ours() -> None:
    with pytest.raises(DockerfileSyntaxError) as caught:
        parse("FROM a\nENV x\n")
    assert caught.value.line == 2 and caught.value.message == "ENV must have two arguments"
