"""A key given twice in one YAML mapping is an error naming both lines, at any depth, in every
YAML document gpuship reads from users (gpuship.yaml, GPUSHIP_* values, the lock file, fleet
files); PyYAML alone keeps the last value without a word."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpuship.cli.config_catalog import load_config
from gpuship.cli.main import main
from gpuship.documents import load_yaml
from gpuship.errors import ConfigError, InputError
from gpuship.limits import DEFAULT_LIMITS
from gpuship.matrix.lockfile import read_lock


def test_a_duplicate_key_in_the_config_is_exit_2_naming_both_lines(tmp_path: Path) -> None:
    config = tmp_path / "gpuship.yaml"
    config.write_text("fail-on: error\nregistries:\n  attempts: 3\n\n\n  attempts: 4\n")
    (tmp_path / "Dockerfile").write_text("FROM scratch\n")
    stderr = io.StringIO()
    code = main(
        ["--config", str(config), "lint", str(tmp_path)],
        environ={},
        stdout=io.StringIO(),
        stderr=stderr,
    )
    assert code == 2
    assert stderr.getvalue() == (
        f"gpuship: error: {config}:6:3: duplicate key 'attempts' (first at line 3)\n"
    )


@pytest.mark.parametrize(
    ("text", "where"),
    [
        (
            "fail-on: error\nlint: {}\nfail-on: warning\n",
            "3:1: duplicate key 'fail-on' (first at line 1)",
        ),
        (
            "matrix:\n  axes:\n    cuda: [12.4]\n    cuda: [12.6]\n",
            "4:5: duplicate key 'cuda' (first at line 3)",
        ),
        ("a:\n  - {x: 1, y: 2, x: 3}\n", "2:18: duplicate key 'x' (first at line 2)"),
        # Spelled apart, the same key once read: `1` and `0x1` are both the integer 1.
        ("rules:\n  1: a\n  0x1: b\n", "3:3: duplicate key '0x1' (first at line 2)"),
    ],
    ids=["top level", "nested", "flow mapping in a list", "same value"],
)
def test_duplicates_at_any_depth(tmp_path: Path, text: str, where: str) -> None:
    path = tmp_path / "gpuship.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as raised:
        load_config(path, {})
    assert str(raised.value) == f"{path}:{where}"


def test_merge_keys_may_be_overridden() -> None:
    # `<<:` brings keys in that the mapping's own keys override: YAML's merge, not a duplicate.
    text = "base: &base {attempts: 3, backoff: 1}\nregistries:\n  <<: *base\n  attempts: 5\n"
    loaded = load_yaml(text, "f.yaml", DEFAULT_LIMITS)
    assert loaded["registries"] == {"attempts": 5, "backoff": 1}


def test_a_duplicate_in_an_environment_value_names_the_variable() -> None:
    with pytest.raises(ConfigError, match=r"^environment GPUSHIP_REGISTRIES__INSECURE:1:8: "):
        load_config(None, {"GPUSHIP_REGISTRIES__INSECURE": "{a: 1, a: 2}"})


def test_a_duplicate_in_the_lock_file(tmp_path: Path) -> None:
    lock = tmp_path / "gpuship.lock"
    digest = "sha256:" + "a" * 64
    lock.write_text(f"version: 1\nbases:\n  img:1: {digest}\n  img:1: {digest}\n")
    with pytest.raises(
        ConfigError, match=r"gpuship.lock:4:3: duplicate key 'img:1' \(first at line 3\)"
    ):
        read_lock(lock)


@st.composite
def nested_with_a_duplicate(draw: st.DrawFn) -> tuple[str, int, int]:
    """YAML nesting mappings `depth` deep whose innermost mapping repeats a key; with the line
    of the repeat and of the first."""
    depth = draw(st.integers(min_value=0, max_value=12))
    keys = draw(
        st.lists(st.from_regex(r"[a-z]{1,6}", fullmatch=True), min_size=1, max_size=4, unique=True)
    )
    repeated = draw(st.sampled_from(keys))
    lines = [f"{'  ' * level}k{level}:" for level in range(depth)]
    indent = "  " * depth
    lines += [f"{indent}{key}: {n}" for n, key in enumerate(keys)]
    first = depth + keys.index(repeated) + 1
    lines.append(f"{indent}{repeated}: again")
    return "\n".join(lines) + "\n", len(lines), first


@settings(max_examples=60, deadline=None)
@given(nested_with_a_duplicate())
def test_a_duplicate_is_found_at_any_depth(case: tuple[str, int, int]) -> None:
    text, line, first = case
    with pytest.raises(
        InputError, match=rf"^f\.yaml:{line}:\d+: duplicate key .* \(first at line {first}\)$"
    ):
        load_yaml(text, "f.yaml", DEFAULT_LIMITS)
