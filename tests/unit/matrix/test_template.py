"""Template syntax: placeholders, filters, escapes, cycles."""

from __future__ import annotations

import pytest

from gpuship.matrix.template import TemplateError, parse_template, resolve_values


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cu{cuda|nodot}-py{python}", "cu1241-py3.11"),
        ("{cuda|major}", "12"),
        ("{cuda|major-minor}", "12.4"),
        ("{ name | lower }", "abc"),
        ("{{literal}}-{python}", "{literal}-3.11"),
        ("plain", "plain"),
    ],
)
def test_render(text: str, expected: str) -> None:
    values = {"cuda": "12.4.1", "python": "3.11", "name": "ABC"}
    assert parse_template(text).render(values) == expected


def test_names_are_collected() -> None:
    assert parse_template("{a}-{b|nodot}-{{c}}").names == {"a", "b"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{cuda", "never closed"),
        ("cuda}", "without"),
        ("{9x}", "not a value name"),
        ("{cuda|upper}", "unknown filter 'upper'"),
    ],
)
def test_bad_templates(text: str, message: str) -> None:
    with pytest.raises(TemplateError, match=message):
        parse_template(text)


def test_missing_value_names_it() -> None:
    with pytest.raises(TemplateError, match="uses 'torch'"):
        parse_template("{torch}").render({})


def test_values_may_refer_to_each_other() -> None:
    got = resolve_values({"cuda": "12.6", "variant": "cu{cuda|nodot}", "index": "/whl/{variant}"})
    assert got["index"] == "/whl/cu126"


def test_a_reference_cycle_is_named() -> None:
    with pytest.raises(TemplateError, match="cycle: a -> b -> a"):
        resolve_values({"a": "{b}", "b": "{a}"})
