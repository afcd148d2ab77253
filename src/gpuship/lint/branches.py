"""Which arm of a shell `if`/`elif`/`else` or `case` a build runs, decided by its build args.

RUN lines branch on build args: `if [ "$USE_FLASH" = "1" ]; then git clone ...; fi`,
`case "$CUDA" in 11.8) ...;; 12.*) ...;; esac`. Read flat, every arm's commands look as if they
all ran, so findings came from arms the default build never takes. `find_branches` reads the
structure of a shell text (the tokenizer's tokens: operators and words with their offsets) and
gives each command its `Guard`s; `decide` evaluates an `if` chain's conditions (`[ ]`, `[[ ]]`,
`test`, `true`/`false`, with `!`, `&&`, `||`, `-a`, `-o`) or a `case` subject against its
patterns, with the values the build has. A condition it cannot decide (a file test, a command's
exit status, a value set at build time) leaves every arm it could pick possible.
"""

from __future__ import annotations

import bisect
import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from gpuship.lint.shellvalue import word_value

Env = Mapping[str, "str | None"]
Token = tuple[str, int, int, bool]  # text, start, end, is_operator (the tokenizer's)
_LOOPS = frozenset({"for", "while", "until", "select"})
# Words after which the next word starts a command again.
_KEEP_START = frozenset({"if", "then", "elif", "else", "do", "while", "until", "!", "{", "time"})
_VARIABLE = re.compile(r"\$\{?#?([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class RawWord:
    """A word as written (`"$CUDA"`), where it is in the text."""

    raw: str
    start: int


@dataclass(frozen=True, eq=False)
class Branches:
    """One `if` chain (an arm per `if`/`elif`, and `else`) or `case` (an arm per pattern list).

    Compared by identity: two RUNs of the same text share it, each decides it with its own
    values."""

    kind: str  # "if" | "case"
    conditions: tuple[tuple[Token, ...] | None, ...]  # if: each arm's condition; None: else
    subject: RawWord | None = None  # case
    patterns: tuple[tuple[RawWord, ...], ...] = ()  # case: each arm's patterns
    exclusive: bool = True  # False: a case arm falls through (`;&`, `;;&`)
    source: str = ""  # the whole text the tokens' offsets point into

    @property
    def arms(self) -> int:
        return len(self.conditions) if self.kind == "if" else len(self.patterns)

    def condition_text(self, arm: int) -> str:
        """How arm `arm`'s condition reads (`[ "$X" = 1 ]`; `case $X in 12.*)`)."""
        if self.kind == "case":
            assert self.subject is not None
            patterns = "|".join(p.raw for p in self.patterns[arm])
            return f"case {self.subject.raw} in {patterns})"
        condition = self.conditions[arm]
        if condition is None:
            return "else"
        text = self.source[condition[0][1] : condition[-1][2]].strip().rstrip(";").strip()
        return text if len(text) <= 80 else text[:77] + "..."


@dataclass(frozen=True)
class Guard:
    """A command runs only when `branches` takes `arm` (`condition`: it is part of that arm's
    condition, run when the earlier arms' conditions fail)."""

    branches: Branches
    arm: int
    condition: bool = False


@dataclass(frozen=True)
class Structure:
    """The branches of a shell text and where each arm's commands are, indexed by offset: a
    script of thousands of `if`s answers each command's question by bisection."""

    points: tuple[int, ...] = ()  # sorted offsets where the set of enclosing arms changes
    active: tuple[tuple[Guard, ...], ...] = ()  # the guards from each point to the next
    headers: tuple[tuple[int, int], ...] = ()  # case subjects and patterns (sorted, disjoint)
    header_starts: tuple[int, ...] = ()

    @classmethod
    def of(cls, regions: list[tuple[int, int, Guard]], headers: list[tuple[int, int]]) -> Structure:
        """The index of `regions` ([start, end) of a condition or body, nested or disjoint)."""
        points = sorted({p for start, end, _ in regions for p in (start, end)})
        ordered = sorted((r for r in regions if r[0] < r[1]), key=lambda r: (r[0], -r[1]))
        open_regions: list[tuple[int, int, Guard]] = []
        active: list[tuple[Guard, ...]] = []
        following = 0
        for point in points:
            while open_regions and open_regions[-1][1] <= point:
                open_regions.pop()
            while following < len(ordered) and ordered[following][0] <= point:
                open_regions.append(ordered[following])
                following += 1
            active.append(tuple(guard for _, _, guard in open_regions))
        spans = tuple(sorted(headers))
        return cls(tuple(points), tuple(active), spans, tuple(start for start, _ in spans))

    def guards(self, offset: int) -> tuple[Guard, ...]:
        """The guards of a command starting at `offset`, outermost first."""
        index = bisect.bisect_right(self.points, offset) - 1
        return self.active[index] if index >= 0 else ()

    def in_header(self, offset: int) -> bool:
        index = bisect.bisect_right(self.header_starts, offset) - 1
        return index >= 0 and offset < self.headers[index][1]


NO_STRUCTURE = Structure()


def describe(guard: Guard) -> str:
    """How the branch of `guard` reads in a message: `if [ "$X" = 1 ]`, `else` of
    `if [ ... ]`, `case "$CUDA" in 12.*)`."""
    branches = guard.branches
    if branches.kind == "case":
        return f"`{branches.condition_text(guard.arm)}`"
    if branches.conditions[guard.arm] is None:
        return f"`else` of `if {branches.condition_text(0)}`"
    keyword = "if" if guard.arm == 0 else "elif"
    return f"`{keyword} {branches.condition_text(guard.arm)}`"


class _Unbalanced(Exception):
    """A reserved word out of place: the text is read flat, as before."""


@dataclass
class _If:
    """An `if` being read: its arms' conditions so far, and where each arm's parts are."""

    state: str = "cond"  # cond | body
    mark: int = 0  # where the current condition or body started
    pending: list[Token] = field(default_factory=list)  # the condition being read
    conditions: list[tuple[Token, ...] | None] = field(default_factory=list)
    condition_ranges: list[tuple[int, int]] = field(default_factory=list)
    bodies: list[tuple[int, int]] = field(default_factory=list)


@dataclass
class _Case:
    """A `case` being read: its subject, each arm's patterns and body."""

    start: int
    state: str = "subject"  # subject | in | pattern | body
    mark: int = 0
    subject: RawWord | None = None
    current: list[RawWord] = field(default_factory=list)  # the patterns being read
    header_start: int = 0
    patterns: list[tuple[RawWord, ...]] = field(default_factory=list)
    bodies: list[tuple[int, int]] = field(default_factory=list)
    exclusive: bool = True


@dataclass
class _Block:
    """`for`/`while`/`until` ... `done`, `{ }`, `( )`: only their nesting matters here."""

    kind: str  # loop | brace | subshell


_Frame = _If | _Case | _Block
_REDIRECTS = frozenset({">", ">>", "<", "&>", ">&", "<>", "<<"})
# Constructs nested deeper than this leave the text read flat, as before: no real RUN comes near,
# and the offset index holds the enclosing arms of every point.
MAX_NESTING = 32


def find_branches(text: str, tokens: list[Token]) -> Structure:
    """The `if`/`case` branches of `text`; NO_STRUCTURE when it has none, or when its reserved
    words do not balance (syntax bash would refuse). Heredoc bodies are not among the tokens."""
    if not any(t[0] in ("if", "case") and not t[3] for t in tokens):
        return NO_STRUCTURE
    try:
        return _Reader(text).read(tokens)
    except _Unbalanced:
        return NO_STRUCTURE


class _Reader:
    """One pass over the tokens, a stack of the constructs open at each."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.stack: list[_Frame] = []
        self.regions: list[tuple[int, int, Guard]] = []
        self.headers: list[tuple[int, int]] = []

    def _push(self, frame: _Frame) -> None:
        if len(self.stack) >= MAX_NESTING:
            raise _Unbalanced
        self.stack.append(frame)

    def read(self, tokens: list[Token]) -> Structure:
        at_start = True  # the next word starts a command (where reserved words count)
        redirect = False  # the next word is a redirection's target
        for token in tokens:
            text, _, _, operator = token
            frame = self.stack[-1] if self.stack else None
            if (
                isinstance(frame, _If)
                and frame.state == "cond"
                and (operator or not at_start or text != "then")
            ):
                frame.pending.append(token)
            if operator:
                redirect = text in _REDIRECTS
                at_start = at_start if redirect else self._operator(token, frame, at_start)
            elif redirect:
                redirect = False
            elif isinstance(frame, _Case) and frame.state != "body":
                self._case_header(frame, token)
                at_start = False
            elif at_start:
                at_start = self._reserved(token, frame)
        if self.stack:
            raise _Unbalanced
        return Structure.of(self.regions, self.headers)

    def _operator(self, token: Token, frame: _Frame | None, at_start: bool) -> bool:
        """An operator; whether a command starts after it."""
        text, start, end, _ = token
        if isinstance(frame, _Case) and frame.state == "pattern":
            if text == ")" and frame.current:
                frame.patterns.append(tuple(frame.current))
                self.headers.append((frame.header_start, end))
                frame.current = []
                frame.state, frame.mark = "body", end
                return True
            if (text == "(" and not frame.current) or (text == "|" and frame.current):
                return False
            if text == ";" and not frame.current:
                return False  # the newline before a pattern
            if text == "&" and not frame.current and self.text[start - 1 : start] == ";":
                frame.exclusive = False  # `;;&` / `;&`: the next arm is tried, or runs, too
                return False
            raise _Unbalanced
        if isinstance(frame, _Case) and frame.state == "body":
            if text == ";;" or (text == ";" and self.text[end : end + 1] == "&"):
                frame.bodies.append((frame.mark, start))
                frame.state = "pattern"
                return False
        elif isinstance(frame, _Case):
            raise _Unbalanced
        if text == "(" and at_start:
            self._push(_Block("subshell"))
            return True
        if text == ")":
            if not isinstance(frame, _Block) or frame.kind != "subshell":
                raise _Unbalanced
            self.stack.pop()
            return False
        return True

    def _reserved(self, token: Token, frame: _Frame | None) -> bool:
        """A word at the start of a command: a reserved word moves the structure along.
        Whether a command starts after it."""
        text, start, end, _ = token
        if text == "if":
            self._push(_If(mark=end))
        elif text in ("then", "elif", "else", "fi"):
            if not isinstance(frame, _If):
                raise _Unbalanced
            self._if_word(token, frame)
        elif text == "case":
            self._push(_Case(start))
            return False
        elif text == "esac":
            if not isinstance(frame, _Case) or frame.state != "body":
                raise _Unbalanced
            frame.bodies.append((frame.mark, start))
            self._close_case(frame)
            return False
        elif text in _LOOPS:
            self._push(_Block("loop"))
            return text not in ("for", "select")
        elif text in ("done", "}"):
            kind = "loop" if text == "done" else "brace"
            if not isinstance(frame, _Block) or frame.kind != kind:
                raise _Unbalanced
            self.stack.pop()
            return False
        elif text == "{":
            self._push(_Block("brace"))
        return text in _KEEP_START

    def _if_word(self, token: Token, frame: _If) -> None:
        text, start, end, _ = token
        if text == "then":
            if frame.state != "cond" or not frame.pending:
                raise _Unbalanced
            frame.conditions.append(tuple(frame.pending))
            frame.condition_ranges.append((frame.mark, start))
            frame.state, frame.mark, frame.pending = "body", end, []
            return
        if frame.state != "body":
            raise _Unbalanced
        frame.bodies.append((frame.mark, start))
        if text == "fi":
            self._close_if(frame)
        elif frame.conditions[-1] is None:
            raise _Unbalanced  # `elif` or a second `else` after `else`
        elif text == "elif":
            frame.state, frame.mark = "cond", end
        else:  # else
            frame.conditions.append(None)
            frame.condition_ranges.append((end, end))
            frame.mark = end

    def _close_if(self, frame: _If) -> None:
        self.stack.pop()
        branches = Branches("if", tuple(frame.conditions), source=self.text)
        parts = zip(frame.condition_ranges, frame.bodies, strict=True)
        for arm, ((c_start, c_end), (b_start, b_end)) in enumerate(parts):
            self.regions.append((c_start, c_end, Guard(branches, arm, condition=True)))
            self.regions.append((b_start, b_end, Guard(branches, arm)))

    def _case_header(self, frame: _Case, token: Token) -> None:
        """A word of a `case` header: its subject, `in`, or a pattern."""
        text, start, end, _ = token
        raw = RawWord(self.text[start:end], start)
        if frame.state == "subject":
            frame.subject, frame.state = raw, "in"
        elif frame.state == "in":
            if text != "in":
                raise _Unbalanced
            frame.state = "pattern"
            self.headers.append((frame.start, end))
        elif text == "esac" and not frame.current:
            self._close_case(frame)
        else:
            if not frame.current:
                frame.header_start = start
            frame.current.append(raw)

    def _close_case(self, frame: _Case) -> None:
        self.stack.pop()
        if frame.subject is None or len(frame.bodies) != len(frame.patterns):
            raise _Unbalanced
        branches = Branches(
            "case", (), frame.subject, tuple(frame.patterns), frame.exclusive, self.text
        )
        for arm, (b_start, b_end) in enumerate(frame.bodies):
            self.regions.append((b_start, b_end, Guard(branches, arm)))


@dataclass(frozen=True)
class Decision:
    """The arms a build may take (`None`: none of them, an `if` without `else` whose
    conditions all fail), and the variables the decision read."""

    possible: frozenset[int | None]
    variables: frozenset[str]

    @property
    def decided(self) -> bool:
        return len(self.possible) == 1

    def runs(self, guard: Guard) -> bool:
        """True when the command under `guard` may run."""
        if not guard.condition:
            return guard.arm in self.possible
        # An arm's condition runs when no earlier arm was taken.
        return any(arm is None or arm >= guard.arm for arm in self.possible)


def decide(branches: Branches, env: Env) -> Decision:
    """The arms `branches` may take with the values in `env` (a value None: unknown)."""
    if branches.kind == "case":
        return _decide_case(branches, env)
    possible: set[int | None] = set()
    variables: set[str] = set()
    for arm, condition in enumerate(branches.conditions):
        if condition is None:
            possible.add(arm)
            return Decision(frozenset(possible), frozenset(variables))
        variables.update(_names(t[0] for t in condition))
        value = _condition(condition, env, branches.source)
        if value is None:
            possible.add(arm)
        elif value:
            possible.add(arm)
            return Decision(frozenset(possible), frozenset(variables))
    possible.add(None)
    return Decision(frozenset(possible), frozenset(variables))


def _decide_case(branches: Branches, env: Env) -> Decision:
    assert branches.subject is not None
    variables = set(_names([branches.subject.raw]))
    everything = frozenset(range(branches.arms)) | {None}
    subject = word_value(branches.subject.raw, env)
    if subject is None or not branches.exclusive:
        return Decision(everything, frozenset(variables))
    possible: set[int | None] = set()
    for arm, patterns in enumerate(branches.patterns):
        for pattern in patterns:
            variables.update(_names([pattern.raw]))
            matched = _matches(subject, pattern.raw, env)
            if matched is None:
                possible.add(arm)
                break
            if matched:
                possible.add(arm)
                return Decision(frozenset(possible), frozenset(variables))
    possible.add(None)
    return Decision(frozenset(possible), frozenset(variables))


def _matches(subject: str, raw: str, env: Env) -> bool | None:
    """Whether `subject` matches a case pattern; a quoted glob character is literal, which
    fnmatch cannot say, so such a pattern is unknown."""
    value = word_value(raw, env)
    if value is None:
        return None
    if len(raw) >= 2 and raw[0] in "'\"" and raw[-1] == raw[0] and raw.count(raw[0]) == 2:
        return subject == value  # quoted whole: a literal
    if any(q in raw for q in "'\"\\") and any(c in value for c in "*?["):
        return None  # partly quoted: which glob characters are literal is not followed
    return fnmatch.fnmatchcase(subject, value)


def _names(raws: Iterable[str]) -> set[str]:
    return {m.group(1) for raw in raws for m in _VARIABLE.finditer(raw)}


# --- conditions: the exit status of `[ ]`, `[[ ]]`, `test`, `true`, `false` ---


def _condition(tokens: tuple[Token, ...], env: Env, text: str) -> bool | None:
    """The exit status (True: 0) of an `if`'s condition list, or None when unknown."""
    # The last pipeline of the list decides; a list of several (`a; b`) is not judged.
    items: list[list[Token]] = [[]]
    operators: list[str] = []
    for token in tokens:
        if token[3] and token[0] in ("&&", "||"):
            operators.append(token[0])
            items.append([])
        elif token[3] and token[0] in (";", "&", "|", "(", ")"):
            if token[0] == ";" and token is tokens[-1]:
                continue
            return None
        else:
            items[-1].append(token)
    if any(not item for item in items):
        return None
    result = _simple(items[0], env, text)
    for operator, item in zip(operators, items[1:], strict=True):
        if operator == "&&":
            if result is False:
                continue
            following = _simple(item, env, text)
            result = following if result else (None if following is not False else False)
        else:
            if result is True:
                continue
            following = _simple(item, env, text)
            result = following if result is False else (None if following is not True else True)
    return result


def _simple(tokens: list[Token], env: Env, text: str) -> bool | None:
    """One simple command of a condition, `!` included."""
    negate = False
    while tokens and not tokens[0][3] and tokens[0][0] == "!":
        negate = not negate
        tokens = tokens[1:]
    if not tokens or any(t[3] for t in tokens):
        return None
    raws = [text[t[1] : t[2]] for t in tokens]
    name = raws[0]
    if name in ("true", ":") and len(raws) == 1:
        value: bool | None = True
    elif name == "false" and len(raws) == 1:
        value = False
    elif name == "[" and raws[-1] == "]":
        value = _test(raws[1:-1], env, double=False)
    elif name == "[[" and raws[-1] == "]]":
        value = _test(raws[1:-1], env, double=True)
    elif name == "test":
        value = _test(raws[1:], env, double=False)
    else:
        return None
    return value if value is None or not negate else not value


class _Test:
    """A recursive reading of a `test` expression: `!`, `-a`/`&&`, `-o`/`||`, parentheses,
    `-n`, `-z`, string and integer comparisons. Unknown operands make the result unknown."""

    def __init__(self, raws: list[str], env: Env, double: bool) -> None:
        self.raws = raws
        self.env = env
        self.double = double
        self.index = 0

    def value(self, raw: str) -> str | None:
        value = word_value(raw, self.env)
        if value is None:
            return None
        if not self.double and not any(q in raw for q in "'\"") and (not value or " " in value):
            return None  # an unquoted empty or multi-word value changes the arguments `[` sees
        return value

    def peek(self) -> str | None:
        return self.raws[self.index] if self.index < len(self.raws) else None

    def take(self) -> str:
        raw = self.raws[self.index]
        self.index += 1
        return raw

    def parse_or(self) -> bool | None:
        result = self.parse_and()
        while self.peek() in ("-o", "||"):
            self.take()
            other = self.parse_and()
            result = (
                True
                if result is True or other is True
                else (None if None in (result, other) else False)
            )
        return result

    def parse_and(self) -> bool | None:
        result = self.parse_not()
        while self.peek() in ("-a", "&&"):
            self.take()
            other = self.parse_not()
            result = (
                False
                if result is False or other is False
                else (None if None in (result, other) else True)
            )
        return result

    def parse_not(self) -> bool | None:
        if self.peek() == "!":
            self.take()
            inner = self.parse_not()
            return None if inner is None else not inner
        return self.primary()

    def primary(self) -> bool | None:
        raw = self.peek()
        if raw is None:
            raise ValueError("missing operand")
        if raw in ("(", "\\("):
            self.take()
            inner = self.parse_or()
            if self.peek() not in (")", "\\)"):
                raise ValueError("unclosed parenthesis")
            self.take()
            return inner
        following = self.raws[self.index + 1] if self.index + 1 < len(self.raws) else None
        if raw in ("-n", "-z") and following is not None:
            self.take()
            operand = self.value(self.take())
            if operand is None:
                return None
            return bool(operand) if raw == "-n" else not operand
        if raw.startswith("-") and len(raw) == 2 and following is not None:
            self.take()
            self.take()
            return None  # a file or terminal test: decided on the build machine
        left_raw = self.take()
        operator = self.peek()
        if operator in ("=", "==", "!=", "<", ">", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "=~"):
            self.take()
            if self.peek() is None:
                raise ValueError("missing operand")
            return self.compare(left_raw, operator, self.take())
        left = self.value(left_raw)
        return None if left is None else bool(left)

    def compare(self, left_raw: str, operator: str, right_raw: str) -> bool | None:
        left, right = self.value(left_raw), self.value(right_raw)
        if left is None or right is None or operator == "=~":
            return None
        if operator in ("=", "==", "!="):
            if self.double and not any(q in right_raw for q in "'\"\\"):
                equal = fnmatch.fnmatchcase(left, right)  # `[[ $X == 12.* ]]`: a pattern
            else:
                equal = left == right
            return equal if operator != "!=" else not equal
        if operator in ("<", ">"):
            return (left < right) if operator == "<" else (left > right)
        try:
            a, b = int(left), int(right)
        except ValueError:
            return None
        return {
            "-eq": a == b,
            "-ne": a != b,
            "-lt": a < b,
            "-le": a <= b,
            "-gt": a > b,
            "-ge": a >= b,
        }[operator]


def _test(raws: list[str], env: Env, *, double: bool) -> bool | None:
    """`test`'s verdict on its arguments, or None when unknown (or not a valid expression:
    then the build's `[` fails, and which way is not worth guessing)."""
    if not raws:
        return False
    reader = _Test(raws, env, double)
    try:
        result = reader.parse_or()
    except ValueError:
        return None
    return result if reader.index == len(raws) else None
