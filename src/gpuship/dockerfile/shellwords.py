"""The part of BuildKit's shell lexer (`frontend/dockerfile/shell`) that finds heredocs.

BuildKit splits a RUN/COPY/ADD line into words with its shell lexer to find `<<EOF` words,
then lexes each heredoc word again to learn its name and whether it was quoted. The lexer
runs with no variables set and unset ones kept as written (`SkipUnsetEnv`), so `$x` and
`${x:-y}` stay literal, but their syntax errors (`${x`, `${}`) are still errors. The escape
character here is always backslash, whatever the file's `escape` directive says.
"""

from __future__ import annotations

from collections.abc import Callable

from gpuship.dockerfile import gostr

_SPECIAL_PARAMS = "@*#?-$!0"


class LexError(ValueError):
    """The lexer's error, worded as BuildKit words it."""


def process_words(text: str, *, raw_quotes: bool, raw_escapes: bool) -> list[str]:
    """`Lex.ProcessWords(text, no env)`: the words of `text` after quote and escape processing."""
    lexer = _Lexer(text, raw_quotes=raw_quotes, raw_escapes=raw_escapes)
    try:
        return lexer.words()
    except LexError as exc:
        raise LexError(f"failed to process {gostr.quote(text)}: {exc}") from None


def process_word(text: str, substitute: Callable[[str], str] | None = None) -> str:
    """`Lex.ProcessWord`: `text` as one word after quote and escape processing, as BuildKit
    reads an ENV/ARG value, WORKDIR or COPY argument. Each variable reference outside single
    quotes (`$X`, `${X:-word}` with its word processed) goes through `substitute`, as written
    when there is none; literal text, quoted or escaped, is never substituted."""
    lexer = _Lexer(text, raw_quotes=False, raw_escapes=False, substitute=substitute)
    try:
        return lexer.stop_on(None)[0]
    except LexError as exc:
        raise LexError(f"failed to process {gostr.quote(text)}: {exc}") from None


class _Words:
    """Accumulates words the way BuildKit's `wordsStruct` does."""

    def __init__(self) -> None:
        self.word: list[str] = []
        self.words: list[str] = []
        self.in_word = False

    def add_char(self, char: str) -> None:
        if char in gostr.SPACE:
            if self.in_word and self.word:
                self.words.append("".join(self.word))
                self.word = []
                self.in_word = False
        else:
            self.add_raw(char)

    def add_raw(self, text: str) -> None:
        self.word.append(text)
        self.in_word = True

    def add_string(self, text: str) -> None:
        for char in text:
            self.add_char(char)

    def finish(self) -> list[str]:
        word = "".join(self.word)
        if word:
            self.words.append(word)
        return self.words


class _Lexer:
    """text/scanner's Next/Peek over `text` (a leading BOM is skipped), and the lexer on top."""

    def __init__(
        self,
        text: str,
        *,
        raw_quotes: bool,
        raw_escapes: bool,
        substitute: Callable[[str], str] | None = None,
    ) -> None:
        self.text = text
        self.pos = 1 if text.startswith("\ufeff") else 0
        self.raw_quotes = raw_quotes
        self.raw_escapes = raw_escapes
        self.substitute = substitute

    def peek(self) -> str | None:
        return self.text[self.pos] if self.pos < len(self.text) else None

    def next(self) -> str | None:
        char = self.peek()
        if char is not None:
            self.pos += 1
        return char

    def words(self) -> list[str]:
        return self.stop_on(None)[1]

    def stop_on(self, stop: str | None) -> tuple[str, list[str]]:
        """processStopOn: up to `stop` (consumed) or the end; the text and its words."""
        result: list[str] = []
        words = _Words()
        while (char := self.peek()) is not None:
            if char == stop:
                self.pos += 1
                return "".join(result), words.finish()
            if char == "$":
                value = self.dollar()
                result.append(value)
                words.add_string(value)
            elif char in ("'", '"'):
                value = self.single_quoted() if char == "'" else self.double_quoted()
                result.append(value)
                words.add_raw(value)
            elif not self.plain(result, words):
                break
        if stop is not None:
            raise LexError(f"unexpected end of statement while looking for matching {stop}")
        return "".join(result), words.finish()

    def plain(self, result: list[str], words: _Words) -> bool:
        """One ordinary or escaped character; False at an escape that ends the text."""
        char = self.text[self.pos]
        self.pos += 1
        if char == "\\":
            if self.raw_escapes:
                words.add_raw(char)
                result.append(char)
            escaped = self.next()
            if escaped is None:
                return False
            words.add_raw(escaped)
            result.append(escaped)
            return True
        words.add_char(char)
        result.append(char)
        return True

    def single_quoted(self) -> str:
        self.pos += 1
        result = ["'"] if self.raw_quotes else []
        while True:
            char = self.next()
            if char is None:
                raise LexError(
                    "unexpected end of statement while looking for matching single-quote"
                )
            if char == "'":
                if self.raw_quotes:
                    result.append(char)
                return "".join(result)
            result.append(char)

    def double_quoted(self) -> str:
        self.pos += 1
        result = ['"'] if self.raw_quotes else []
        while True:
            char = self.peek()
            if char is None:
                raise LexError(
                    "unexpected end of statement while looking for matching double-quote"
                )
            if char == '"':
                self.pos += 1
                if self.raw_quotes:
                    result.append(char)
                return "".join(result)
            if char == "$":
                result.append(self.dollar())
                continue
            self.pos += 1
            if char == "\\":
                if self.raw_escapes:
                    result.append(char)
                following = self.peek()
                if following is None:
                    continue  # BuildKit ignores a trailing escape, then finds no closing quote
                if following in ('"', "$", "\\"):
                    char = following
                    self.pos += 1
            result.append(char)

    def dollar(self) -> str:
        """processDollar: the reference substituted, or as written with nothing to substitute
        it; a lone `$` is literal."""
        reference = self.reference()
        if self.substitute is None or reference == "$":
            return reference
        return self.substitute(reference)

    def reference(self) -> str:
        """A variable reference as written (its word processed), or its syntax error."""
        self.pos += 1
        if self.peek() != "{":
            name = self.name()
            return "$" + name if name else "$"
        self.pos += 1
        following = self.peek()
        if following is None:
            raise LexError("syntax error: missing '}'")
        if following in ("{", "}", ":"):
            raise LexError("syntax error: bad substitution")
        name = self.name()
        modifier = self.next()
        written = _rune(modifier)
        if modifier == "}":
            return "${" + name + "}"
        if modifier not in (":", "+", "-", "?"):
            raise LexError(f"unsupported modifier ({written}) in substitution")
        if modifier == ":":
            written += _rune(self.next())
        try:
            word, _ = self.stop_on("}")
        except LexError:
            if self.peek() is None:
                raise LexError("syntax error: missing '}'") from None
            raise
        return "${" + name + written + word + "}"

    def name(self) -> str:
        """processName: digits, one special parameter, or letters, digits and underscores."""
        start = self.pos
        text = self.text
        if start < len(text) and text[start].isdecimal():
            while self.pos < len(text) and text[self.pos].isdecimal():
                self.pos += 1
            return text[start : self.pos]
        if start < len(text) and text[start] in _SPECIAL_PARAMS:
            self.pos += 1
            return text[start]
        while self.pos < len(text) and _name_char(text[self.pos]):
            self.pos += 1
        return text[start : self.pos]


def _name_char(char: str) -> bool:
    """unicode.IsLetter, unicode.IsDigit (category Nd) or underscore."""
    return char.isalpha() or char.isdecimal() or char == "_"


def _rune(char: str | None) -> str:
    """`string(ch)` of a rune that may be text/scanner's EOF (-1), which Go writes as U+FFFD."""
    return "\ufffd" if char is None else char
