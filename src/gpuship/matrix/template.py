"""The template syntax of `images:` entries: `{name}` and `{name|filter}` over a cell's values.

Syntax (documented in docs and the sample project):

- `{cuda}` is replaced by the cell's value of `cuda` (an axis, an `include` key or a built-in
  such as `image`, `min_driver`, `arch_list`, `torch_variant`).
- `{cuda|nodot}` applies a filter: `nodot` (`12.4` -> `124`), `major` (`12.4.1` -> `12`),
  `major-minor` (`12.4.1` -> `12.4`), `lower`.
- `{{` and `}}` are literal braces.

Parsing and rendering are separate so that a config can be checked once for unknown names
(before any cell exists) and rendered many times cheaply. Only the standard library is used.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass


class TemplateError(ValueError):
    """A template that cannot be parsed or rendered; the message says why."""


def _nodot(value: str) -> str:
    return value.replace(".", "")


def _major(value: str) -> str:
    return value.split(".", 1)[0]


def _major_minor(value: str) -> str:
    return ".".join(value.split(".")[:2])


FILTERS: dict[str, Callable[[str], str]] = {
    "nodot": _nodot,
    "major": _major,
    "major-minor": _major_minor,
    "lower": str.lower,
}

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


@dataclass(frozen=True)
class Placeholder:
    """One `{name|filter}` in a template."""

    name: str
    filter: str | None = None


@dataclass(frozen=True)
class Template:
    """A parsed template: literal text and placeholders in order."""

    text: str
    parts: tuple[str | Placeholder, ...]

    @property
    def names(self) -> frozenset[str]:
        """Every value name the template uses."""
        return frozenset(part.name for part in self.parts if isinstance(part, Placeholder))

    def render(self, values: Mapping[str, str]) -> str:
        """The text with every placeholder replaced; TemplateError names a missing value."""
        out: list[str] = []
        for part in self.parts:
            if isinstance(part, str):
                out.append(part)
                continue
            if part.name not in values:
                raise TemplateError(f"template '{self.text}' uses '{part.name}', which is not set")
            value = values[part.name]
            out.append(FILTERS[part.filter](value) if part.filter else value)
        return "".join(out)


def parse_template(text: str) -> Template:
    """Parse `text`; TemplateError on an unclosed brace, a bad name or an unknown filter."""
    parts: list[str | Placeholder] = []
    literal: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char in "{}" and text.startswith(char * 2, index):
            literal.append(char)
            index += 2
            continue
        if char == "}":
            raise TemplateError(f"template '{text}': '}}' without '{{' (write '}}}}' for a brace)")
        if char != "{":
            literal.append(char)
            index += 1
            continue
        end = text.find("}", index)
        if end < 0:
            raise TemplateError(f"template '{text}': '{{' is never closed")
        if literal:
            parts.append("".join(literal))
            literal = []
        parts.append(_placeholder(text, text[index + 1 : end].strip()))
        index = end + 1
    if literal:
        parts.append("".join(literal))
    return Template(text=text, parts=tuple(parts))


def _placeholder(text: str, inner: str) -> Placeholder:
    name, _, filter_name = inner.partition("|")
    name, filter_name = name.strip(), filter_name.strip()
    if not _NAME.fullmatch(name):
        raise TemplateError(f"template '{text}': '{{{inner}}}' is not a value name")
    if "|" in inner and filter_name not in FILTERS:
        known = ", ".join(FILTERS)
        raise TemplateError(f"template '{text}': unknown filter '{filter_name}' (known: {known})")
    return Placeholder(name=name, filter=filter_name or None)


def resolve_values(raw: Mapping[str, str]) -> dict[str, str]:
    """Render values that refer to each other (`include` keys may use axes or other keys).

    A value that is not a template stays as it is. A reference chain that comes back to where
    it started is a TemplateError naming the chain (`a -> b -> a`).
    """
    parsed = {name: parse_template(value) for name, value in raw.items()}
    resolved: dict[str, str] = {}

    def visit(name: str, chain: tuple[str, ...]) -> str:
        if name in resolved:
            return resolved[name]
        if name in chain:
            cycle = " -> ".join((*chain[chain.index(name) :], name))
            raise TemplateError(f"values refer to each other in a cycle: {cycle}")
        template = parsed[name]
        inner = {dep: visit(dep, (*chain, name)) for dep in sorted(template.names) if dep in parsed}
        resolved[name] = template.render(inner)
        return resolved[name]

    for name in raw:
        visit(name, ())
    return resolved
