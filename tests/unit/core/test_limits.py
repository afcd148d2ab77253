"""The limits module and the bounded readers: each limit at its value and one past it."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from gpuship.cli.config_catalog import load_config
from gpuship.documents import load_json, load_yaml, read_file, read_json
from gpuship.errors import ConfigError, InputError, LimitExceeded
from gpuship.limits import DEFAULT_LIMITS, Limits


def nested_json(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def nested_yaml(depth: int) -> str:
    # Block style: libyaml caps flow nesting on its own, block nesting is ours to bound.
    return "".join(f"{'  ' * level}k{level}:\n" for level in range(depth)) + "  " * depth + "x\n"


def alias_ladder(rungs: int, width: int) -> str:
    """`a0` has `width` scalars; each next anchor repeats the previous one `width` times."""
    lines = [f"a0: &a0 [{', '.join(['x'] * width)}]"]
    for rung in range(1, rungs):
        lines.append(f"a{rung}: &a{rung} [{', '.join([f'*a{rung - 1}'] * width)}]")
    return "\n".join(lines) + "\n"


def test_every_limit_is_positive_and_named_in_kebab_case() -> None:
    for name, value in vars(DEFAULT_LIMITS).items():
        assert value > 0, name
        assert Limits.key(name) == "limits." + name.replace("_", "-")


def test_json_depth_at_limit_and_past_it() -> None:
    limits = DEFAULT_LIMITS.override(json_max_depth=5)
    assert load_json(nested_json(5), "doc", limits) == [[[[[]]]]]
    with pytest.raises(LimitExceeded, match=r"doc: JSON nests deeper than 5 levels") as raised:
        load_json(nested_json(6), "doc", limits)
    assert raised.value.limit == "limits.json-max-depth"


def test_json_past_the_recursion_limit_is_a_limit_not_a_recursion_error() -> None:
    with pytest.raises(LimitExceeded, match="nests deeper than 64"):
        load_json(nested_json(200_000), "doc", DEFAULT_LIMITS)


def test_json_objects_count_toward_depth() -> None:
    limits = DEFAULT_LIMITS.override(json_max_depth=2)
    assert load_json(b'{"a": {"b": 1}}', "doc", limits) == {"a": {"b": 1}}
    with pytest.raises(LimitExceeded):
        load_json(b'{"a": {"b": [1]}}', "doc", limits)


def test_json_items_at_limit_and_past_it() -> None:
    limits = DEFAULT_LIMITS.override(json_max_items=5)
    assert load_json(b"[1,2,3,4,5]", "doc", limits) == [1, 2, 3, 4, 5]  # 4 commas + 1 bracket
    with pytest.raises(LimitExceeded, match="6 commas and brackets") as raised:
        load_json(b"[1,2,3,4,5,6]", "doc", limits)
    assert raised.value.limit == "limits.json-max-items"


@pytest.mark.parametrize(
    "data",
    [b"{", b"\xff\xfe", b"[" + b"9" * 5000 + b"]", b"[1,]", b""],
    ids=["truncated", "not-utf8", "5000-digit-number", "trailing-comma", "empty"],
)
def test_invalid_json_is_an_input_error(data: bytes) -> None:
    with pytest.raises(InputError, match=r"^doc: not JSON: "):
        load_json(data, "doc", DEFAULT_LIMITS)


def test_file_size_at_limit_and_past_it(tmp_path: Path) -> None:
    limits = DEFAULT_LIMITS.override(json_max_bytes=8)
    path = tmp_path / "doc.json"
    path.write_bytes(b"[1,2,33]")
    assert read_json(path, "audit file", limits) == [1, 2, 33]
    path.write_bytes(b"[1,2,333]")
    with pytest.raises(LimitExceeded, match=r"audit file has 9 bytes \(limit limits.json-max"):
        read_json(path, "audit file", limits)


def test_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "blob"
    os.mkfifo(fifo)
    result: list[BaseException] = []

    def read() -> None:
        try:
            read_file(fifo, "blob", DEFAULT_LIMITS, "json_max_bytes")
        except InputError as error:
            result.append(error)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=5)
    assert not reader.is_alive(), "reading a FIFO blocked"
    assert "is not a regular file (a FIFO)" in str(result[0])


def test_directory_and_device_are_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a regular file"):
        read_file(tmp_path, "manifest", DEFAULT_LIMITS, "json_max_bytes")
    with pytest.raises(InputError, match=r"not a regular file \(a device\)"):
        read_file(Path("/dev/zero"), "manifest", DEFAULT_LIMITS, "json_max_bytes")


def test_yaml_depth_at_limit_and_past_it() -> None:
    limits = DEFAULT_LIMITS.override(yaml_max_depth=4)
    assert load_yaml(nested_yaml(4), "f.yaml", limits) == {"k0": {"k1": {"k2": {"k3": "x"}}}}
    with pytest.raises(LimitExceeded, match=r"f.yaml:5: YAML nests deeper than 4 levels"):
        load_yaml(nested_yaml(5), "f.yaml", limits)


def test_yaml_aliases_count_as_what_they_stand_for() -> None:
    # a0: 1 + 3 nodes; a1: 1 + 3 * 4; the top mapping 1 + keys 2 + ... = 1 + 2 + 4 + 13 = 20.
    text = alias_ladder(2, 3)
    limits = DEFAULT_LIMITS.override(yaml_max_nodes=20)
    assert load_yaml(text, "f.yaml", limits)["a1"] == [["x"] * 3] * 3
    with pytest.raises(LimitExceeded, match="once its aliases are expanded"):
        load_yaml(text, "f.yaml", limits.override(yaml_max_nodes=19))


def test_alias_bomb_stops_in_the_event_pass() -> None:
    with pytest.raises(LimitExceeded, match=r"f.yaml:\d+: YAML stands for more than 200000"):
        load_yaml(alias_ladder(10, 9), "f.yaml", DEFAULT_LIMITS)


def test_yaml_size_at_limit_and_past_it() -> None:
    limits = DEFAULT_LIMITS.override(yaml_max_bytes=6)
    assert load_yaml("a: bcd", "f.yaml", limits) == {"a": "bcd"}
    with pytest.raises(LimitExceeded, match="YAML has 7 characters"):
        load_yaml("a: bcde", "f.yaml", limits)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "gpuship.yaml"
    path.write_text(text)
    return path


def test_limits_section_is_read_and_validated(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "limits:\n  layer-max-entries: 7\n"), {}).config
    assert config.limits.layer_max_entries == 7
    assert config.limits.json_max_depth == DEFAULT_LIMITS.json_max_depth
    with pytest.raises(ConfigError, match=r"gpuship.yaml:2:3: limits.json-max-depth: Input"):
        load_config(write(tmp_path, "limits:\n  json-max-depth: 0\n"), {})
    with pytest.raises(ConfigError, match="did you mean 'json-max-depth'"):
        load_config(write(tmp_path, "limits:\n  json-max-dept: 3\n"), {})


def test_limits_from_environment(tmp_path: Path) -> None:
    environ = {"GPUSHIP_LIMITS__MATRIX_MAX_CELLS": "12"}
    assert load_config(None, environ).config.limits.matrix_max_cells == 12


def test_config_file_is_read_within_environment_limits(tmp_path: Path) -> None:
    path = write(tmp_path, "fail-on: error\n")
    with pytest.raises(ConfigError, match=r"config file has 15 bytes \(limit limits.yaml-max"):
        load_config(path, {"GPUSHIP_LIMITS__YAML_MAX_BYTES": "14"})
    assert load_config(path, {"GPUSHIP_LIMITS__YAML_MAX_BYTES": "15"}).config.fail_on == "error"


def test_config_alias_bomb_and_deep_nesting_are_config_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="once its aliases are expanded"):
        load_config(write(tmp_path, alias_ladder(10, 9)), {})
    with pytest.raises(ConfigError, match="nests deeper than 64 levels"):
        load_config(write(tmp_path, nested_yaml(65)), {})


def test_environment_value_alias_bomb_is_bounded() -> None:
    bomb = alias_ladder(10, 9).replace("\n", "\n ")  # a flow mapping would do the same
    # An env value that fails to load stays the raw string: the field then rejects it.
    with pytest.raises(ConfigError, match="environment GPUSHIP_FAIL_ON"):
        load_config(None, {"GPUSHIP_FAIL_ON": bomb})
