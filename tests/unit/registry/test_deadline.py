"""The command deadline, on data (the hostile server tests in tests/integration/registry drive
it over HTTP)."""

from __future__ import annotations

import pytest

from gpuship.cli.context import Context
from gpuship.config.locate import DEFAULT_DEADLINE_S
from gpuship.errors import ConfigError
from gpuship.registry.deadline import Deadline


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


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
    flag = Context(config_path=None, environ={"GPUSHIP_DEADLINE": "42"}, flags={"deadline": 7.5})
    assert flag.deadline.seconds == 7.5
    tuned = Context(
        config_path=None,
        environ={"GPUSHIP_REGISTRIES__REQUEST_TIMEOUT": "2", "GPUSHIP_REGISTRIES__ATTEMPTS": "3"},
    )
    assert (tuned.retry_policy.timeout_s, tuned.retry_policy.attempts) == (2.0, 3)
    with pytest.raises(ConfigError, match="deadline"):
        _ = Context(config_path=None, environ={"GPUSHIP_DEADLINE": "0"}).deadline
