"""GitHub `strategy.matrix` include/exclude semantics."""

from __future__ import annotations

import pytest

from gpuship.matrix.expand import ExpansionError, expand


def _values(axes, include=(), exclude=()):
    return [dict(c.values) for c in expand(axes, include, exclude)]


def test_include_follows_the_github_docs_example() -> None:
    # The worked example of docs.github.com "Expanding or adding matrix configurations".
    got = _values(
        {"fruit": ["apple", "pear"], "animal": ["cat", "dog"]},
        [
            {"color": "green"},
            {"color": "pink", "animal": "cat"},
            {"fruit": "apple", "shape": "circle"},
            {"fruit": "banana"},
            {"fruit": "banana", "animal": "cat"},
        ],
    )
    assert got == [
        {"fruit": "apple", "animal": "cat", "color": "pink", "shape": "circle"},
        {"fruit": "apple", "animal": "dog", "color": "green", "shape": "circle"},
        {"fruit": "pear", "animal": "cat", "color": "pink"},
        {"fruit": "pear", "animal": "dog", "color": "green"},
        {"fruit": "banana"},
        {"fruit": "banana", "animal": "cat"},
    ]


def test_product_order_is_first_axis_slowest() -> None:
    got = _values({"version": ["10", "12"], "os": ["a", "b"]})
    assert got == [
        {"version": "10", "os": "a"},
        {"version": "10", "os": "b"},
        {"version": "12", "os": "a"},
        {"version": "12", "os": "b"},
    ]


def test_exclude_matches_partially_and_runs_before_include() -> None:
    got = _values(
        {"os": ["linux", "windows"], "version": ["12", "14", "16"]},
        include=[{"os": "windows", "version": "14", "extra": "x"}],
        exclude=[{"os": "windows"}],
    )
    assert {"os": "windows", "version": "14", "extra": "x"} in got
    assert [c for c in got if c["os"] == "windows"] == [
        {"os": "windows", "version": "14", "extra": "x"}
    ]
    assert len(got) == 4


def test_include_only_matrix_gives_one_cell_per_entry() -> None:
    assert _values({}, [{"cuda": "12.4"}, {"cuda": "12.6", "torch": "2.6.0"}]) == [
        {"cuda": "12.4"},
        {"cuda": "12.6", "torch": "2.6.0"},
    ]


def test_included_combinations_are_flagged() -> None:
    combos = expand({"a": ["1"]}, [{"a": "2"}])
    assert [c.from_include for c in combos] == [False, True]


@pytest.mark.parametrize(
    ("axes", "exclude", "message"),
    [
        ({"a": []}, [], "axis 'a' has no values"),
        ({"a": ["1"]}, [{"b": "1"}], "exclude[0] key 'b' is not an axis"),
        ({"a": ["1"]}, [{}], "exclude[0] is empty"),
    ],
)
def test_inconsistent_entries_are_errors(axes, exclude, message) -> None:
    with pytest.raises(ExpansionError, match=message.replace("[", r"\[").replace("]", r"\]")):
        expand(axes, (), exclude)
