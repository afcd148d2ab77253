"""gpuship.lock: deterministic text, validation, change detection."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuship.errors import ConfigError
from gpuship.matrix.lockfile import lock_changes, read_lock, render_lock, write_lock

A = "sha256:" + "a" * 64
B = "sha256:" + "b" * 64


def test_render_is_sorted_and_round_trips(tmp_path: Path) -> None:
    bases = {"z.io/b:1": A, "a.io/a:2": B}
    text = render_lock(bases)
    assert text.index("a.io/a:2") < text.index("z.io/b:1")
    assert render_lock(dict(reversed(list(bases.items())))) == text
    path = tmp_path / "gpuship.lock"
    write_lock(path, bases)
    lock = read_lock(path)
    assert lock is not None and lock.bases == bases


def test_missing_lock_is_none(tmp_path: Path) -> None:
    assert read_lock(tmp_path / "gpuship.lock") is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("version: 1\nbases: {x: 'sha256:12'}\n", "not a sha256 digest"),
        ("version: 2\n", "version"),
        ("bases: [\n", "invalid YAML"),
        ("version: 1\nextra: 1\n", "extra"),
    ],
)
def test_invalid_lock_names_the_file(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "gpuship.lock"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as caught:
        read_lock(path)
    assert str(path) in str(caught.value)


def test_changes_name_added_removed_and_moved() -> None:
    changes = lock_changes({"a:1": A, "b:1": A}, {"b:1": B, "c:1": A})
    assert [c.describe() for c in changes] == [
        "a:1 is locked but no longer used by any cell",
        f"b:1 moved from {A} to {B}",
        f"c:1 is not locked (now {A})",
    ]
    assert lock_changes({"a:1": A}, {"a:1": A}) == []
