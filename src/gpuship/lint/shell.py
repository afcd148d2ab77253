"""Split the shell of a `RUN` (or a script it runs) into simple commands with word offsets.

Most RUN lines are flat lists of simple commands (`a && b | c; d`, quotes, env prefixes,
redirects). `_tokenize`, a quote-aware tokenizer that keeps offsets, splits those exactly
(`shlex` splits words too, but does not report where a word starts, and every finding needs
a column). Anything with structure (`if`/`for`/`while`, functions, `{ }`/`( )`, command
substitution, heredocs) goes to `bashlex`, a port of bash's own grammar, imported only then:
its import alone costs ~80 ms and a parse ~0.4 ms per line. bashlex refuses some syntax
(`case`, `$((...))`, `[[ ]]`), and a per-file budget keeps machine-written 10 MB files fast;
those scripts fall back to the tokenizer.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from gpuship.dockerfile.source import Span, Text
from gpuship.lint.branches import NO_STRUCTURE, Guard, Structure, find_branches
from gpuship.lint.shellvalue import quote_end, word_value
from gpuship.lint.stages import Env, expand

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ash", "ksh"})
# Leading words that run the rest of the line as a command.
_WRAPPERS = frozenset({"sudo", "env", "time", "nohup", "exec", "command", "nice", "stdbuf"})
# Wrapper options whose value is the next word (`sudo -u app pip ...`, `nice -n 10 make`).
_WRAPPER_VALUE_OPTIONS = {
    "sudo": frozenset({"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U", "-T"}),
    "env": frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "time": frozenset({"-f", "--format", "-o", "--output"}),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
}
# `conda run -n ENV CMD...` (also mamba, micromamba): CMD runs inside the environment. Options of
# `run` that take a value (conda's `run --help`; micromamba adds `-r/--root-prefix`).
_ENV_RUNNERS = frozenset({"conda", "mamba", "micromamba"})
_ENV_RUN_VALUE_OPTIONS = frozenset(
    {"-n", "--name", "-p", "--prefix", "--cwd", "-r", "--root-prefix", "--rc-file", "-a"}
)
_OPERATORS = ("&&", "||", ";;", ">>", "&>", ">&", "<<", "<>", ";", "|", "&", "(", ")", ">", "<")
_RESERVED = frozenset(
    {
        "if",
        "then",
        "else",
        "elif",
        "fi",
        "do",
        "done",
        "for",
        "while",
        "until",
        "case",
        "esac",
        "in",
        "{",
        "}",
        "!",
        "function",
        "select",
    }
)
# bashlex parses this many characters per Dockerfile before the tokenizer takes over.
BASHLEX_BUDGET_CHARS = 100_000
_OPERATOR_START = frozenset("&|;()<>")
# Characters a word takes as they are: not blank, operator, escape, quote or `$`.
_PLAIN_RUN = re.compile(r"[^ \t\r\n&|;()<>\\$'\"]+")
# A word that `(` continues as a bash array: `pkgs=(`, `pkgs+=(`, `opts[1]=(`.
_ARRAY_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[[^]]*\])?\+?=")


@dataclass(frozen=True)
class Word:
    """One shell word: its unquoted text and its offsets in the script."""

    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Redirect:
    """A redirection such as `>=1.2` in `pip install pkg>=1.2` (an unquoted specifier)."""

    operator: str
    target: Word
    start: int


@dataclass(frozen=True)
class Command:
    """A simple command: env prefixes, argv words, redirects, and where it sits."""

    words: tuple[Word, ...]
    assignments: tuple[Word, ...]
    redirects: tuple[Redirect, ...]
    pipeline: int  # commands sharing this id are joined by `|`
    position: int  # index inside its pipeline
    source: Text
    file: Path | None  # None: the Dockerfile itself; else a script from the build context
    # The shell branches it runs in, outermost first (`if [ "$X" = 1 ]; then cmd; fi`).
    guards: tuple[Guard, ...] = ()

    @cached_property
    def name(self) -> str:
        """The program's base name (`/usr/bin/pip3` -> `pip3`), or '' for a bare assignment."""
        return os.path.basename(self.words[0].text) if self.words else ""

    @property
    def argv(self) -> list[str]:
        """The unquoted words."""
        return [w.text for w in self.words]

    def span(self, word: Word) -> Span:
        """The file region of one of this command's words."""
        return self.source.span(word.start, word.end)


@dataclass(frozen=True)
class Script:
    """All simple commands of a shell text, in order."""

    source: Text
    file: Path | None
    commands: tuple[Command, ...]


class ShellParser:
    """Parses shell texts for one Dockerfile, with bashlex while its budget lasts."""

    def __init__(self, budget: int = BASHLEX_BUDGET_CHARS) -> None:
        self._budget = budget
        self._pipelines = 0
        # Machine-written Dockerfiles repeat the same RUN text many times; parse it once.
        self._cache: dict[str, tuple[list[_Raw], Structure]] = {}

    def parse(
        self,
        source: Text,
        file: Path | None = None,
        depth: int = 0,
        guards: tuple[Guard, ...] = (),
    ) -> Script:
        """Every simple command in `source`, including those inside `sh -c '...'`, each with
        the branches it runs in (`guards`: those of the command that runs `source`)."""
        raw, structure = self._raw_commands(source.value)
        commands: list[Command] = []
        for words, assignments, redirects, pipeline, position in raw:
            start = min(
                (w.start for w in (*words, *assignments, *(r.target for r in redirects))), default=0
            )
            if structure.in_header(start):
                continue  # a `case` subject or pattern, not a command
            command = normalise(
                Command(
                    words,
                    assignments,
                    redirects,
                    pipeline,
                    position,
                    source,
                    file,
                    guards + structure.guards(start),
                )
            )
            commands.append(command)
            inner = inline_script(command)
            if inner is not None and depth < 3:
                start, end = inner
                nested = self.parse(source.sub(start, end), file, depth + 1, command.guards)
                commands.extend(nested.commands)
        return Script(source, file, tuple(commands))

    def _raw_commands(self, text: str) -> tuple[list[_Raw], Structure]:
        cached = self._cache.get(text)
        if cached is None:
            if not text.strip():
                cached = [], NO_STRUCTURE
            else:
                tokens = list(_tokenize(text))
                cached = self._parse_raw(text, tokens), find_branches(text, tokens)
            self._cache[text] = cached
        return cached

    def _parse_raw(self, text: str, tokens: list[tuple[str, int, int, bool]]) -> list[_Raw]:
        if _flat(tokens):
            return self._tokenized(tokens)
        if self._budget > 0:
            self._budget -= len(text)
            import bashlex

            try:
                trees = bashlex.parse(text)
            except Exception:  # bashlex raises several unrelated types on unsupported syntax
                trees = None
            if trees is not None:
                collected: list[_Raw] = []
                for tree in trees:
                    self._walk(tree, collected, None)
                return collected
        return self._tokenized(tokens)

    def _next_pipeline(self) -> int:
        self._pipelines += 1
        return self._pipelines

    def _walk(self, node: Any, out: list[_Raw], pipe: tuple[int, int] | None) -> None:
        kind = node.kind
        if kind == "pipeline":
            pipeline = self._next_pipeline()
            position = 0
            for part in node.parts:
                if part.kind != "pipe":
                    self._walk(part, out, (pipeline, position))
                    position += 1
            return
        if kind == "command":
            words: list[Word] = []
            assignments: list[Word] = []
            redirects: list[Redirect] = []
            for part in node.parts:
                if part.kind == "word":
                    words.append(Word(part.word, part.pos[0], part.pos[1]))
                elif part.kind == "assignment" and not words:
                    assignments.append(Word(part.word, part.pos[0], part.pos[1]))
                elif part.kind == "assignment":
                    words.append(Word(part.word, part.pos[0], part.pos[1]))
                elif part.kind == "redirect" and hasattr(part.output, "word"):
                    target = Word(part.output.word, part.output.pos[0], part.output.pos[1])
                    redirects.append(Redirect(str(part.type), target, part.pos[0]))
            pipeline, position = pipe if pipe else (self._next_pipeline(), 0)
            out.append((tuple(words), tuple(assignments), tuple(redirects), pipeline, position))
            for part in node.parts:
                self._walk_substitutions(part, out)
            return
        for child in _children(node):
            self._walk(child, out, None)

    def _walk_substitutions(self, node: Any, out: list[_Raw]) -> None:
        for part in getattr(node, "parts", None) or ():
            if part.kind in ("commandsubstitution", "processsubstitution"):
                self._walk(part.command, out, None)
            else:
                self._walk_substitutions(part, out)

    def _tokenized(self, tokens: list[tuple[str, int, int, bool]]) -> list[_Raw]:
        out: list[_Raw] = []
        words: list[Word] = []
        assignments: list[Word] = []
        redirects: list[Redirect] = []
        pipeline, position = self._next_pipeline(), 0
        pending_redirect: tuple[str, int] | None = None

        def flush(next_in_pipe: bool) -> None:
            nonlocal words, assignments, redirects, pipeline, position
            if words or assignments:
                out.append((tuple(words), tuple(assignments), tuple(redirects), pipeline, position))
            words, assignments, redirects = [], [], []
            if next_in_pipe:
                position += 1
            else:
                pipeline, position = self._next_pipeline(), 0

        for token, start, end, is_operator in tokens:
            if is_operator:
                if token in (">", ">>", "<", "&>", ">&", "<>", "<<"):
                    pending_redirect = (token, start)
                else:
                    flush(next_in_pipe=token == "|")  # noqa: S105 (an operator, not a secret)
                continue
            if pending_redirect is not None:
                redirects.append(
                    Redirect(pending_redirect[0], Word(token, start, end), pending_redirect[1])
                )
                pending_redirect = None
            elif not words and token in _RESERVED:
                continue
            elif not words and "=" in token and token.split("=", 1)[0].isidentifier():
                assignments.append(Word(token, start, end))
            else:
                words.append(Word(token, start, end))
        flush(next_in_pipe=False)
        return out


_Raw = tuple[tuple[Word, ...], tuple[Word, ...], tuple[Redirect, ...], int, int]


def _flat(tokens: list[tuple[str, int, int, bool]]) -> bool:
    """True for a flat list of simple commands, which the tokenizer splits exactly."""
    at_start = True
    for token, _start, _end, is_operator in tokens:
        if is_operator:
            if token in ("(", ")", "<<"):
                return False
            at_start = token in ("&&", "||", ";", "|", "&", ";;")
            continue
        if (at_start and token in _RESERVED) or "$(" in token or "`" in token:
            return False
        at_start = False
    return True


def _children(node: Any) -> Iterator[Any]:
    for attribute in ("parts", "list"):
        value = getattr(node, attribute, None)
        if isinstance(value, list):
            yield from value
    command = getattr(node, "command", None)
    if command is not None and hasattr(command, "kind"):
        yield command


def normalise(command: Command) -> Command:
    """Drop wrappers (`sudo -u app`, `env A=1`, `conda run -n ml`) so `name` is the program
    that really runs."""
    words = list(command.words)
    assignments = list(command.assignments)
    while words:
        inner = _env_run_command(words)
        if inner is not words:
            words = inner
            continue
        wrapper = os.path.basename(words[0].text)
        if wrapper not in _WRAPPERS:
            break
        words.pop(0)
        while words and (words[0].text.startswith("-") or _is_assignment(words[0].text)):
            skipped = words.pop(0)
            if _is_assignment(skipped.text):
                assignments.append(skipped)
            elif skipped.text in _WRAPPER_VALUE_OPTIONS.get(wrapper, ()) and words:
                words.pop(0)
    if len(words) == len(command.words):
        return command
    return Command(
        tuple(words),
        tuple(assignments),
        command.redirects,
        command.pipeline,
        command.position,
        command.source,
        command.file,
        command.guards,
    )


def _env_run_command(words: list[Word]) -> list[Word]:
    """`conda run -n ml --no-capture-output pip install x` -> `pip install x`; other words as
    they are."""
    if len(words) < 3 or os.path.basename(words[0].text) not in _ENV_RUNNERS:
        return words
    if words[1].text != "run":
        return words
    index = 2
    while index < len(words) and words[index].text.startswith("-"):
        option = words[index].text
        index += 2 if option in _ENV_RUN_VALUE_OPTIONS else 1
    return words[index:] if index < len(words) else words


def expand_shell(text: str, env: Env) -> tuple[str, bool]:
    """A shell word with its variables expanded. What else the shell computes from them (a
    command substitution such as `$(echo $CUDA | tr -d .)`, bash's `${CUDA//./}`) is evaluated
    by `shellvalue` where the values alone decide it; anything else (`$(git describe)`) is
    decided when the build runs, so the word is unknown (False), never a value."""
    value, complete = expand(text, env)
    if "$(" in value or "`" in value or "${" in value:
        computed = word_value(text, env)
        return (text, False) if computed is None else (computed, True)
    return value, complete


def _is_assignment(text: str) -> bool:
    return "=" in text and text.split("=", 1)[0].isidentifier()


def inline_script(command: Command) -> tuple[int, int] | None:
    """Offsets of the script in `sh -c 'script'`, inside its quotes."""
    if command.name not in SHELLS:
        return None
    words = command.words
    for index, word in enumerate(words[1:], start=1):
        text = word.text
        if text.startswith("-") and not text.startswith("--") and "c" in text[1:]:
            if index + 1 < len(words):
                target = words[index + 1]
                raw = command.source.value[target.start : target.end]
                if len(raw) >= 2 and raw[0] in "'\"" and raw[-1] == raw[0]:
                    return target.start + 1, target.end - 1
                return target.start, target.end
            return None
        if not text.startswith("-"):
            return None
    return None


def shell_tokens(text: str) -> Iterator[tuple[str, int, int, bool]]:
    """(token, start, end, is_operator) for a shell text: its words unquoted, a newline as `;`,
    a bash array assignment one word, heredoc bodies left out (for `lint.shellsyntax`)."""
    return _tokenize(text)


def _tokenize(text: str) -> Iterator[tuple[str, int, int, bool]]:
    """(token, start, end, is_operator) for `text`, honouring quotes, escapes and comments."""
    index = 0
    length = len(text)
    heredocs: list[tuple[str, bool]] = []  # delimiters whose bodies follow the next newline
    while index < length:
        char = text[index]
        if char in " \t\r":
            index += 1
            continue
        if char == "\n":
            yield ";", index, index + 1, True
            index = _after_heredocs(text, index + 1, heredocs)
            heredocs = []
            continue
        if char == "#":
            newline = text.find("\n", index)
            index = length if newline < 0 else newline
            continue
        operator = (
            next((op for op in _OPERATORS if text.startswith(op, index)), None)
            if char in _OPERATOR_START
            else None
        )
        if operator is not None:
            yield operator, index, index + len(operator), True
            index += len(operator)
            if operator == "<<" and not text.startswith("<", index):  # `<<<` is a here-string
                delimiter = _heredoc_delimiter(text, index)
                if delimiter is not None:
                    word, strip_tabs, start, index = delimiter
                    heredocs.append((word, strip_tabs))
                    yield word, start, index, False
            continue
        start = index
        token, index, is_word = _word(text, index)
        if is_word:
            if token.isdigit() and text.startswith((">", "<"), index):
                continue  # a file descriptor: `2>&1`
            yield token, start, index, False


def _word(text: str, index: int) -> tuple[str, int, bool]:
    """The unquoted word at `index`, where it ends, and whether it is one: `''` is an empty
    word, a bare line continuation is none."""
    length = len(text)
    start = index
    value: list[str] = []
    quoted = False
    while index < length:
        plain = _PLAIN_RUN.match(text, index)
        if plain is not None:  # ordinary characters in one step: megabyte scripts stay fast
            value.append(plain.group())
            index = plain.end()
            continue
        char = text[index]
        if char == "(" and _ARRAY_ASSIGNMENT.fullmatch(text, start, index):
            # bash's `name=(a b)` is one assignment word, its list free to span lines; read
            # as `name=` and a subshell, it unbalanced the if/case structure of the script.
            close = _array_end(text, index)
            value.append(text[index:close])
            index = close
            continue
        if char in " \t\r\n" or char in _OPERATOR_START:
            break
        if char == "\\" and index + 1 < length:
            if text[index + 1] != "\n":
                value.append(text[index + 1])
            index += 2
        elif char == "$" and text.startswith("(", index + 1):
            close = _balanced(text, index + 1)
            value.append(text[index:close])
            index = close
        elif char in "'\"":
            quoted = True
            close = text.find(char, index + 1)
            close = length if close < 0 else close
            value.append(text[index + 1 : close])
            index = close + 1
        else:
            value.append(char)
            index += 1
    return "".join(value), index, bool(value) or quoted


def _balanced(text: str, open_index: int) -> int:
    """The offset just past the `)` closing the `(` at `open_index` (or the end)."""
    depth = 0
    for index in range(open_index, len(text)):
        if text[index] == "(":
            depth += 1
        elif text[index] == ")":
            depth -= 1
            if depth == 0:
                return index + 1
    return len(text)


def _array_end(text: str, open_index: int) -> int:
    """The offset just past the `)` closing the array list opened at `open_index` (or the end),
    past quoted parts, escapes and comments, where a `)` closes nothing."""
    depth = 0
    index = open_index
    length = len(text)
    while index < length:
        char = text[index]
        if char == "\\":
            index += 2
            continue
        if char in "'\"":
            close = quote_end(text, index)
            index = length if close is None else close + 1
            continue
        if char == "#" and text[index - 1] in " \t\n(":
            newline = text.find("\n", index)
            index = length if newline < 0 else newline
            continue
        depth += {"(": 1, ")": -1}.get(char, 0)
        index += 1
        if depth == 0:
            return index
    return length


def _heredoc_delimiter(text: str, index: int) -> tuple[str, bool, int, int] | None:
    """After a `<<` ending at `index`: the heredoc's delimiter (unquoted), whether `<<-` strips
    the body's leading tabs, and where the delimiter word starts and ends; None for no
    heredoc."""
    line = text[text.rfind("\n", 0, index) + 1 : index]
    if line.count("((") > line.count("))"):
        return None  # a shift in arithmetic: `(( mask = 1 << bits ))`
    strip_tabs = text.startswith("-", index)
    index += strip_tabs
    while index < len(text) and text[index] in " \t":
        index += 1
    word, end, is_word = _word(text, index)
    return (word, strip_tabs, index, end) if is_word else None


def _after_heredocs(text: str, index: int, heredocs: list[tuple[str, bool]]) -> int:
    """Where the shell reads on after the bodies of `heredocs`, which start at `index`: each
    body is data up to its delimiter line (or the end), never commands, so its `if`s and
    `else:`s (a Python script fed to `python - <<PY`) shape nothing."""
    for delimiter, strip_tabs in heredocs:
        while index < len(text):
            newline = text.find("\n", index)
            end = len(text) if newline < 0 else newline
            line = text[index:end]
            index = end + 1
            if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                break
    return min(index, len(text))
