"""Shell syntax errors every POSIX shell rejects, found with certainty: a compound command left
open at the end of a script (`if ...; then ...` with no `fi`, a `do` with no `done`), or a word
that closes nothing (`echo ok fi`: the `fi` a missing `;` turned into an argument leaves its
`if` open).

Only the structure of the reserved words is judged, on scripts whose every token the quote-aware
tokenizer of `lint.shell` reads exactly: a script with what it does not model (heredocs,
backquotes, arithmetic, `[[ ]]`, arrays, process substitution, functions, `exit`, `;&`, a
command substitution holding quotes, comments, escapes or parentheses) is not judged.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gpuship.lint.shell import shell_tokens

_UNMODELLED = re.compile(r"`|<<|\(\(|\[\[|\$'|<\(|>\(|\b(?:function|select|coproc|exit)\b|;&")
_SEPARATORS = frozenset({";", "&&", "||", "|", "&"})
_REDIRECTS = frozenset({">", ">>", "<", "&>", ">&", "<>"})
# What closes each compound command.
_CLOSER = {"if": "fi", "while": "done", "for": "done", "case": "esac", "{": "}", "(": ")"}
# A closing or continuing word: the compounds (and their phases) it may follow.
_CONTINUES = {
    "then": ({"if"}, {"cond"}),
    "elif": ({"if"}, {"body"}),
    "else": ({"if"}, {"body"}),
    "fi": ({"if"}, {"body", "else"}),
    "do": ({"while", "for"}, {"cond"}),
    "done": ({"while", "for"}, {"body"}),
    "}": ({"{"}, {"body"}),
    "esac": ({"case"}, {"patterns", "body"}),
}
_NEXT_PHASE = {"then": "body", "elif": "cond", "else": "else", "do": "body"}


@dataclass(frozen=True)
class SyntaxProblem:
    """Where a script stops parsing (offsets of the word at fault) and why."""

    start: int
    end: int
    message: str


@dataclass
class _Frame:
    """An open compound command: its kind, the phase it is in, and the word that opened it."""

    kind: str  # if | while (also until) | for | case | { | (
    phase: str
    start: int
    end: int
    word: str


class _NotJudged(Exception):
    """The script uses structure the parser does not model: no finding."""


def syntax_problem(text: str) -> SyntaxProblem | None:
    """The first structural syntax error of a shell script, or None (none, or not judged)."""
    if _UNMODELLED.search(text) or not _substitutions_modelled(text):
        return None
    parser = _ShellParser()
    try:
        for piece, start, end, operator in shell_tokens(text):
            if operator:
                problem = parser.operator(piece, start, end, newline=text[start] == "\n")
            else:  # a quoted or escaped word is never a reserved word
                problem = parser.word(piece, start, end, bare=text[start:end] == piece)
            if problem is not None:
                return problem
    except _NotJudged:
        return None
    return parser.unclosed()


def _substitutions_modelled(text: str) -> bool:
    """Every `$(...)` holds no quote, comment, escape, `case` or parenthesis: the tokenizer reads
    it as one part of a word."""
    for match in re.finditer(r"\$\(", text):
        close = text.find(")", match.end())
        inner = text[match.end() : close] if close >= 0 else ""
        if close < 0 or any(c in inner for c in "'\"#\\(") or re.search(r"\bcase\b", inner):
            return False
    return True


class _ShellParser:
    def __init__(self) -> None:
        self.stack: list[_Frame] = []
        self.at_start = True  # the next word starts a command: a reserved word counts there
        self.prefixed = False  # the command so far is assignments: a reserved word is a name
        self.target = False  # the next word is a redirect's target

    def operator(self, piece: str, start: int, end: int, newline: bool) -> SyntaxProblem | None:
        top = self.stack[-1] if self.stack else None
        if newline and self.at_start:
            return None  # an empty line, or the line break after `then`/`do`/`{`
        if piece in _REDIRECTS:
            self.target = True  # its target is the next word; the command goes on
            return None
        if top is not None and top.kind == "case" and top.phase in ("subject", "patterns"):
            if top.phase == "patterns" and piece == ")":
                top.phase = "body"
                self._command()
                return None
            if top.phase == "patterns" and piece in ("(", "|", ";"):
                return None
            raise _NotJudged
        if top is not None and top.kind == "for" and top.phase in ("name", "after-name", "list"):
            if piece != ";":
                raise _NotJudged
            top.phase = "expect-do"
            return None
        if piece == ";;" and top is not None and top.kind == "case" and top.phase == "body":
            top.phase = "patterns"
            return None
        if piece == "(" and self.at_start:
            self.stack.append(_Frame("(", "body", start, end, "("))
            self._command()
            return None
        if piece == ")" and top is not None and top.kind == "(" and not self.at_start:
            self.stack.pop()
            self.at_start = False
            return None
        if piece in _SEPARATORS and not self.at_start:
            self._command()
            return None
        if piece == ";" and top is not None and top.phase == "expect-do":
            return None
        raise _NotJudged  # `( ... )` after a word, `;;` outside a case arm, `; ;`...

    def word(self, piece: str, start: int, end: int, bare: bool) -> SyntaxProblem | None:
        top = self.stack[-1] if self.stack else None
        if self.target:  # `> if`: a file named `if`; after it a reserved word is a name
            self.target = False
            self.prefixed = self.prefixed or self.at_start
            return None
        if top is not None and top.kind == "for" and top.phase != "body":
            return self._for_word(top, piece)
        if top is not None and top.kind == "case" and top.phase != "body":
            return self._case_word(top, piece)
        if not self.at_start:
            return None
        if bare and (piece in _CLOSER or piece in _CONTINUES or piece in ("until", "!", "in")):
            if self.prefixed:
                raise _NotJudged  # `A=1 if`: after an assignment a reserved word is a name
            return self._reserved(piece, start, end)
        if "=" in piece and piece.split("=", 1)[0].isidentifier():
            self.prefixed = True
            return None
        self.at_start = False
        return None

    def unclosed(self) -> SyntaxProblem | None:
        """The innermost compound command left open at the end, if any."""
        if not self.stack:
            return None
        frame = self.stack[-1]
        if frame.kind == "(":
            return SyntaxProblem(frame.start, frame.end, "`(` has no `)` before the end")
        wanted = _CLOSER[frame.kind]
        if frame.kind == "if" and frame.phase == "cond":
            wanted = "then"
        elif frame.kind in ("while", "for") and frame.phase != "body":
            wanted = "do"
        return SyntaxProblem(
            frame.start,
            frame.end,
            f"`{frame.word}` has no `{wanted}` before the end: a `;` or a newline "
            f"missing before a `{wanted}` makes it an argument of the command before it",
        )

    def _reserved(self, piece: str, start: int, end: int) -> SyntaxProblem | None:
        top = self.stack[-1] if self.stack else None
        if piece in ("if", "while", "until"):
            self.stack.append(_Frame("if" if piece == "if" else "while", "cond", start, end, piece))
            self._command()
            return None
        if piece in ("for", "case"):
            self.stack.append(
                _Frame(piece, "name" if piece == "for" else "subject", start, end, piece)
            )
            return None
        if piece in ("{", "!"):
            if piece == "{":
                self.stack.append(_Frame("{", "body", start, end, piece))
            self._command()
            return None
        if piece == "in":
            raise _NotJudged
        kinds, phases = _CONTINUES[piece]
        if top is None or top.kind not in kinds or top.phase not in phases:
            return SyntaxProblem(start, end, _unexpected(piece, top))
        if piece in ("fi", "done", "}", "esac"):
            self.stack.pop()
            self.at_start = False
            return None
        top.phase = _NEXT_PHASE[piece]
        self._command()
        return None

    def _for_word(self, top: _Frame, piece: str) -> SyntaxProblem | None:
        """`for NAME [in WORDS] ; do` (or `for NAME do`): the words before `do` run nothing."""
        if top.phase == "name":
            top.phase = "after-name"
        elif top.phase == "after-name" and piece == "in":
            top.phase = "list"
        elif top.phase in ("after-name", "expect-do") and piece == "do":
            top.phase = "body"
            self._command()
        elif top.phase != "list":
            raise _NotJudged
        return None

    def _case_word(self, top: _Frame, piece: str) -> SyntaxProblem | None:
        """`case WORD in PATTERN) ... ;; esac`: the subject and the patterns run nothing."""
        if top.phase == "subject":
            top.phase = "in" if piece != "in" else "subject"
            if piece == "in":
                raise _NotJudged  # `case in`: the word is missing
            return None
        if top.phase == "in":
            if piece != "in":
                raise _NotJudged
            top.phase = "patterns"
            return None
        if piece == "esac":  # patterns: `esac` ends the case
            self.stack.pop()
            self.at_start = False
        return None

    def _command(self) -> None:
        self.at_start = True
        self.prefixed = False


def _unexpected(piece: str, top: _Frame | None) -> str:
    """Why `piece` cannot stand where it does."""
    if top is None:
        opener = {"do": "while/until/for", "done": "do", "}": "{", "esac": "case"}.get(piece, "if")
        return f"`{piece}` belongs to no open `{opener}`"
    missing = {"if": "then", "while": "do", "for": "do"}.get(top.kind, _CLOSER[top.kind])
    if top.kind in ("if", "while", "for") and top.phase == "body":
        missing = _CLOSER[top.kind]
    return f"unexpected `{piece}`: the `{top.word}` before it has no `{missing}` yet"
