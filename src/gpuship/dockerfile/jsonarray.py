"""The JSON form of an instruction (`RUN ["a", "b"]`), read the way BuildKit's Go reads it.

BuildKit hands the text to Go's `encoding/json` decoder and takes the first JSON value; what
follows it is ignored (`["a"] b` is JSON form). Go differs from Python's `json` here: no
`NaN`/`Infinity`, at most 10,000 levels of nesting, a number that overflows float64 is an
error, and an unpaired surrogate escape decodes to U+FFFD. The outcome is three-way: a list of
strings, "not JSON" (the instruction is in shell form), or `NotStringArray` (an error).
"""

from __future__ import annotations

import json
import math
import re

# Go's encoding/json scanner refuses deeper nesting (maxNestingDepth).
MAX_DEPTH = 10_000
_SPACE = re.compile(r"[ \t\n\r]*")
_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"')
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_LITERAL = re.compile(r"true|false|null")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class NotStringArray(ValueError):
    """Valid JSON array with an element that is not a string."""

    def __init__(self) -> None:
        super().__init__("when using JSON array syntax, arrays must be comprised of strings only")


class _NotGoJson(Exception):
    """Not a JSON value Go accepts: the instruction falls back to shell form."""


def string_array(text: str) -> list[str] | None:
    """The strings of the JSON array `text` starts with, or None when it is not JSON form.

    `text` must start with `[`. Raises `NotStringArray` for a valid array holding anything
    but strings.
    """
    try:
        elements, only_strings = _array(text)
    except _NotGoJson:
        return None
    if not only_strings:
        raise NotStringArray
    return elements


def _array(text: str) -> tuple[list[str], bool]:
    """Scan one JSON value iteratively; collect the strings of the outermost array."""
    strings: list[str] = []
    only_strings = True
    stack: list[str] = []  # the closing bracket of each open container
    state = "value"  # what comes next: "value", "key" or "after" (a value)
    pos = 0
    while state != "after" or stack:
        pos = _skip_space(text, pos)
        char = text[pos : pos + 1]
        if state == "key":
            pos, state = _key(text, pos), "value"
        elif state == "after":
            pos, state = _after(text, pos, char, stack)
        elif char in ("[", "{"):
            only_strings = only_strings and len(stack) != 1
            stack.append("]" if char == "[" else "}")
            if len(stack) > MAX_DEPTH:
                raise _NotGoJson
            pos = _skip_space(text, pos + 1)
            if text.startswith(stack[-1], pos):
                stack.pop()
                pos, state = pos + 1, "after"
            else:
                state = "value" if char == "[" else "key"
        else:
            pos, value = _scalar(text, pos)
            if len(stack) == 1:
                if value is None:
                    only_strings = False
                else:
                    strings.append(value)
            state = "after"
    return strings, only_strings


def _skip_space(text: str, pos: int) -> int:
    return _SPACE.match(text, pos).end()  # type: ignore[union-attr]


def _after(text: str, pos: int, char: str, stack: list[str]) -> tuple[int, str]:
    """Past a comma (then a value or key comes) or one closing bracket."""
    if char == ",":
        return pos + 1, ("key" if stack[-1] == "}" else "value")
    if char != stack[-1]:
        raise _NotGoJson
    stack.pop()
    return pos + 1, "after"


def _scalar(text: str, pos: int) -> tuple[int, str | None]:
    """A string (its value) or another scalar (None) at `pos`."""
    if text.startswith('"', pos):
        found = _STRING.match(text, pos)
        if found is None:
            raise _NotGoJson
        value: str = json.loads(found.group())
        return found.end(), _LONE_SURROGATE.sub("\ufffd", value)
    number = _NUMBER.match(text, pos)
    if number is not None:
        if math.isinf(float(number.group())):
            raise _NotGoJson  # Go: "cannot unmarshal number ... into float64"
        return number.end(), None
    literal = _LITERAL.match(text, pos)
    if literal is None:
        raise _NotGoJson
    return literal.end(), None


def _key(text: str, pos: int) -> int:
    """Past an object key and its colon."""
    found = _STRING.match(text, pos)
    if found is None:
        raise _NotGoJson
    pos = _skip_space(text, found.end())
    if not text.startswith(":", pos):
        raise _NotGoJson
    return pos + 1
