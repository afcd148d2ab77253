"""How BuildKit splits an instruction's text: command, builder flags, words, HEALTHCHECK type.

Each function follows its Go original in `frontend/dockerfile/parser` (`splitCommand`,
`extractBuilderFlags`, `parseWords`, `parseHealthConfig`), including where Go walks the
UTF-8 bytes rather than the characters: a byte 0x85 or 0xA0 inside a multi-byte character is
a space to `unicode.IsSpace(rune(b))`, so a flag can end mid-character. Such split bytes
travel as surrogate escapes (`surrogateescape`), exactly as Go keeps them.
"""

from __future__ import annotations

import re

from gpuship.dockerfile import gostr

# reWhitespace: ASCII blanks only, no newline.
WHITESPACE = re.compile(r"[\t\v\f\r ]+")
_SPACE_RUN = re.compile("[" + re.escape(gostr.SPACE) + "]*")
_BYTE_SPACE_RUN = re.compile(rb"[\t\n\v\f\r \x85\xa0]*")
_BYTE_WORD_RUN = re.compile(rb"[^\t\n\v\f\r \x85\xa0]*")
_FLAG_PLAIN = re.compile(rb"[^\t\n\v\f\r \x85\xa0'\"\\]+")
_FLAG_QUOTED = {0x22: re.compile(rb'[^"\\]+'), 0x27: re.compile(rb"[^'\\]+")}
_IN_WORD, _IN_SPACES, _IN_QUOTE = 0, 1, 2


def split_command(line: str) -> tuple[str, list[str], str]:
    """The command word, its `--flags` and the rest of the line (splitCommand)."""
    parts = WHITESPACE.split(line.strip(gostr.SPACE), maxsplit=1)
    if len(parts) < 2:
        return parts[0], [], ""
    rest, flags = builder_flags(parts[1])
    return parts[0], flags, rest.strip(gostr.SPACE)


def split_whitespace(text: str) -> tuple[str, ...]:
    """`reWhitespace.Split(text, -1)` for text without leading or trailing blanks."""
    return tuple(WHITESPACE.split(text)) if text else ()


def _decode(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def builder_flags(text: str) -> tuple[str, list[str]]:
    """extractBuilderFlags: leading `--name=value` words (quotes and `\\` processed), the rest."""
    if not text.startswith("--"):
        return text, []
    data = text.encode("utf-8", "surrogateescape")
    flags: list[str] = []
    pos = 0
    while True:
        pos = _BYTE_SPACE_RUN.match(data, pos).end()  # type: ignore[union-attr]
        if pos == len(data):
            return "", flags
        if not data.startswith(b"--", pos):
            return _decode(data[pos:]), flags
        word, blank_ok, pos = _flag_word(data, pos)
        if word == b"--":  # a bare `--` ends the flags; the blank after it stays in the rest
            return _decode(data[pos:]), flags
        if blank_ok or word:
            flags.append(word.decode("latin-1"))
        if pos == len(data):
            return "", flags
        pos += 1


def _flag_word(data: bytes, pos: int) -> tuple[bytearray, bool, int]:
    """The flag word starting at `pos` with its quotes and `\\` processed, whether it held quotes
    (`--x=""` is a flag, an empty one) and where it ends: at a blank outside quotes or the end."""
    end = len(data)
    word = bytearray()
    quote = 0  # the quote byte while inside quotes
    blank_ok = False
    while pos < end:
        plain = (_FLAG_QUOTED[quote] if quote else _FLAG_PLAIN).match(data, pos)
        if plain is not None:
            word += plain.group()
            pos = plain.end()
            continue
        char = data[pos]
        if not quote:
            if char in gostr.SPACE_BYTES:
                break
            if char in (0x22, 0x27):
                quote, blank_ok = char, True
                pos += 1
                continue
        elif char == quote:
            quote = 0
            pos += 1
            continue
        if char == 0x5C:  # backslash escapes the next byte, in or out of quotes; a last one goes
            pos += 1
            if pos == end:
                break
            char = data[pos]
        word.append(char)
        pos += 1
    return word, blank_ok, pos


def _runs(escape: str) -> tuple[re.Pattern[str], dict[str, re.Pattern[str]]]:
    space = re.escape(gostr.SPACE)
    plain = re.compile(f"[^{space}'\"{re.escape(escape)}]+")
    quoted = {
        "'": re.compile("[^']+"),
        '"': re.compile(f'[^"{re.escape(escape)}]+'),
    }
    return plain, quoted


_RUNS = {escape: _runs(escape) for escape in ("\\", "`")}


def words(text: str, escape: str) -> list[str]:
    """parseWords: blank-separated words; quotes and escapes are kept, only grouped by."""
    text = gostr.invalid_as_replacement(text)
    plain_run, quoted_runs = _RUNS[escape]
    found: list[str] = []
    word: list[str] = []
    phase, quote, blank_ok, pos, end = _IN_SPACES, "", False, 0, len(text)
    while True:
        if phase == _IN_SPACES:
            pos = _SPACE_RUN.match(text, pos).end()  # type: ignore[union-attr]
            if pos == end:
                return found
            phase = _IN_WORD
        if pos == end:
            if blank_ok or word:
                found.append("".join(word))
            return found
        run = (plain_run if phase == _IN_WORD else quoted_runs[quote]).match(text, pos)
        if run is not None:
            word.append(run.group())
            pos = run.end()
            continue
        char = text[pos]
        if phase == _IN_WORD:
            if char in gostr.SPACE:
                if blank_ok or word:
                    found.append("".join(word))
                word, blank_ok, phase = [], False, _IN_SPACES
                pos += 1
                continue
            if char in ("'", '"'):
                quote, blank_ok, phase = char, True, _IN_QUOTE
        elif char == quote:
            phase = _IN_WORD
        if char == escape and (phase == _IN_WORD or quote != "'"):
            if pos + 1 == end:
                phase = _IN_WORD
                pos += 1
                continue
            word.append(char)
            pos += 1
            char = text[pos]
        word.append(char)
        pos += 1


def health_type(text: str) -> tuple[str, str]:
    """parseHealthConfig's split: the first blank-free run of bytes, and what follows the blanks.

    An empty type means there was nothing to split.
    """
    data = text.encode("utf-8", "surrogateescape")
    sep = _BYTE_WORD_RUN.match(data).end()  # type: ignore[union-attr]
    after = _BYTE_SPACE_RUN.match(data, sep).end()  # type: ignore[union-attr]
    return _decode(data[:sep]), _decode(data[after:])
