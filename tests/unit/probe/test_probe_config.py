"""Every number of `probe:` is finite and bounded: infinity, NaN and 1e308 are one clear config
error naming the field (exit 2), never a hang (`rate: .inf` once spun forever) or a traceback;
a schedule past limits.probe-max-arrivals is refused before it is built."""

from __future__ import annotations

import subprocess
import sys
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from gpuship.cli.config_catalog import load_config
from gpuship.errors import ConfigError
from gpuship.probe.config import ProbeConfig


def _numeric(annotation: object) -> tuple[bool, bool]:
    """(is a number, is a list of numbers) for a field's annotation."""
    args = typing.get_args(annotation)
    origin = typing.get_origin(annotation)
    if annotation in (int, float):
        return True, False
    if origin is typing.Annotated:
        return _numeric(args[0])
    if origin in (typing.Union, types.UnionType):
        return any(_numeric(a)[0] for a in args if a is not type(None)), False
    if origin is list and args:
        return False, _numeric(args[0])[0]
    return False, False


def numeric_fields(model: type[BaseModel], path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The YAML path of every number in `model`, nested sections and list items included."""
    for name, field in model.model_fields.items():
        key = (*path, field.alias or name)
        number, listed = _numeric(field.annotation)
        if number:
            yield key
        elif listed:
            yield (*key, 0)
        elif typing.get_origin(field.annotation) is list:
            (item,) = typing.get_args(field.annotation)
            if isinstance(item, type) and issubclass(item, BaseModel):
                yield from numeric_fields(item, (*key, 0))
        elif isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            yield from numeric_fields(field.annotation, key)


FIELDS = list(numeric_fields(ProbeConfig, ("probe",)))


def config_with(path: tuple[Any, ...], value: object) -> dict[str, Any]:
    """A config whose `path` holds `value` (a list index makes a one-item list; a step needs
    its other field)."""
    root: dict[str, Any] = {}
    node: Any = root
    for key, after in zip(path, (*path[1:], None), strict=True):
        if after is None:
            node[key] = value
        elif isinstance(after, int):
            node[key] = [{"rate": 1, "duration-s": 1}] if key == "steps" else [None]
            node = node[key]
        elif isinstance(key, int):
            node[key] = node[key] if isinstance(node[key], dict) else {}
            node = node[key]
        else:
            node = node.setdefault(key, {})
    return root


def test_every_numeric_probe_field_is_found() -> None:
    # The walk reaches the nested sections and the list items (a check that cannot pass
    # vacuously on an empty list).
    assert ("probe", "profile", "steps", 0, "rate") in FIELDS
    assert ("probe", "request", "expected-status", 0) in FIELDS
    assert ("probe", "slo", "p99-ms") in FIELDS
    assert len(FIELDS) >= 30


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan"), 1e308])
@pytest.mark.parametrize("path", FIELDS, ids=lambda p: ".".join(map(str, p)))
def test_a_number_that_is_not_finite_and_bounded_names_its_field(
    tmp_path: Path, path: tuple[Any, ...], value: float
) -> None:
    config = tmp_path / "gpuship.yaml"
    config.write_text(yaml.safe_dump(config_with(path, value)))
    with pytest.raises(ConfigError) as raised:
        load_config(config, {})
    message = str(raised.value)
    assert f": {'.'.join(map(str, path))}: " in message, message
    assert message.startswith(str(config)) and "\n" not in message


def test_the_defaults_and_a_large_real_ramp_are_accepted(tmp_path: Path) -> None:
    assert ProbeConfig().planned_arrivals() < 2_000
    ramp = {"steps": [{"rate": 1000, "duration-s": 300}] * 3, "warmup-s": 10}
    config = tmp_path / "gpuship.yaml"
    config.write_text(yaml.safe_dump({"probe": {"profile": ramp}}))
    probe = load_config(config, {}).config.probe
    assert probe.planned_arrivals() == 1000 * 10 + 3 * 1000 * 300 + 50 * 20 + 2 * 10


def _gpuship_probe(tmp_path: Path, probe: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    (tmp_path / "gpuship.yaml").write_text(yaml.safe_dump({"probe": probe}))
    return subprocess.run(
        [sys.executable, "-m", "gpuship", "probe", "--url", "http://127.0.0.1:9", "img"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_rate_inf_exits_2_naming_the_field(tmp_path: Path) -> None:
    step = {"rate": float("inf"), "duration-s": 5}
    done = _gpuship_probe(tmp_path, {"profile": {"steps": [step]}})
    assert done.returncode == 2, done.stderr
    assert "probe.profile.steps.0.rate" in done.stderr and "Traceback" not in done.stderr


def test_a_schedule_past_the_limit_exits_2_before_it_is_built(tmp_path: Path) -> None:
    steps = [{"rate": 100_000, "duration-s": 86_400}] * 3
    done = _gpuship_probe(tmp_path, {"profile": {"steps": steps}})
    assert done.returncode == 2, done.stderr
    assert "probe-max-arrivals" in done.stderr and "Traceback" not in done.stderr
