"""The registry limits and the command deadline, on data (the hostile server tests in
tests/integration/registry drive them over HTTP)."""

from __future__ import annotations

import json

import pytest

from gpuship.cli.context import Context
from gpuship.config.locate import DEFAULT_DEADLINE_S
from gpuship.errors import ConfigError, InputError
from gpuship.registry.deadline import Deadline
from gpuship.registry.limits import JSON_DEPTH, RegistryLimitExceeded, json_depth, load_json


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("1", 0),
        ("[]", 1),
        ('{"a": [1, {"b": []}]}', 4),
        ('{"a": "[[[[{{{{"}', 1),  # brackets in strings do not count
        ('{"a": "\\"[[[", "b": [[]]}', 3),  # nor after an escaped quote
        ('{"a": "\\\\", "b": [[]]}', 3),  # an escaped backslash ends before the quote
        ("[[[", 3),  # cut short: what is open counts
        ("[]]", 1),  # unbalanced the other way: the parser names it
    ],
)
def test_json_depth(text: str, depth: int):
    assert json_depth(text, 10) == depth


def test_json_at_the_depth_limit_parses_and_one_past_is_refused():
    at_limit = "[" * JSON_DEPTH + "]" * JSON_DEPTH
    assert load_json(at_limit, "doc") == json.loads(at_limit)
    past = "[" * (JSON_DEPTH + 1) + "]" * (JSON_DEPTH + 1)
    with pytest.raises(RegistryLimitExceeded, match=f"doc nests JSON deeper than {JSON_DEPTH}"):
        load_json(past, "doc")


def test_json_past_the_recursion_limit_is_a_clear_error_not_a_recursion_error():
    with pytest.raises(RegistryLimitExceeded):
        load_json(b"[" * 200_000 + b"]" * 200_000, "manifest")
    with pytest.raises(InputError, match="error body is not JSON"):
        load_json(b"{nope", "error body")


def test_deadline_counts_from_its_start_and_keeps_a_reserve_for_cleanup():
    clock = Clock()
    deadline = Deadline(100, start=90.0, clock=clock)  # 10 s already spent
    # A fifth of the budget (at most 30 s) is kept back for undoing a failed release.
    assert deadline.remaining() == pytest.approx(70.0)
    assert deadline.until_end() == pytest.approx(90.0)
    with deadline.cleanup():
        assert deadline.remaining() == pytest.approx(90.0)
    assert deadline.remaining() == pytest.approx(70.0)
    clock.now = 170.0
    assert deadline.remaining() <= 0 < deadline.until_end()
    assert Deadline(1000, clock=clock).remaining() == pytest.approx(970.0)  # reserve capped
    assert "600 s" in Deadline(600).describe()


def test_no_deadline_never_runs_out():
    deadline = Deadline(None)
    assert deadline.remaining() == float("inf")
    assert deadline.describe() == "no deadline"


def test_the_command_deadline_comes_from_flag_environment_or_default():
    assert Context(config_path=None, environ={}).deadline.seconds == DEFAULT_DEADLINE_S
    from_env = Context(config_path=None, environ={"GPUSHIP_DEADLINE": "42"})
    assert from_env.deadline.seconds == 42
    flag = Context(config_path=None, environ={"GPUSHIP_DEADLINE": "42"}, deadline_flag=7.5)
    assert flag.deadline.seconds == 7.5
    tuned = Context(
        config_path=None,
        environ={"GPUSHIP_REGISTRIES__REQUEST_TIMEOUT": "2", "GPUSHIP_REGISTRIES__ATTEMPTS": "3"},
    )
    assert (tuned.retry_policy.timeout_s, tuned.retry_policy.attempts) == (2.0, 3)
    with pytest.raises(ConfigError, match="deadline"):
        _ = Context(config_path=None, environ={"GPUSHIP_DEADLINE": "0"}).deadline
