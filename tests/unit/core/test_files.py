"""The one atomic writer and the one size formatter every stage uses."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuship.errors import InputError
from gpuship.files import write_atomically
from gpuship.units import human_size


def test_writes_whole_files_and_creates_the_directory(tmp_path: Path) -> None:
    target = tmp_path / "deep" / "er" / "report.sarif"
    write_atomically(target, "one\n")
    write_atomically(target, "two\n")
    assert target.read_text() == "two\n"
    assert [p.name for p in target.parent.iterdir()] == ["report.sarif"]  # no temp file left


def test_a_write_that_fails_midway_leaves_no_temp_file(tmp_path: Path) -> None:
    # A directory where the file should be: the rename fails after the temp file is written.
    target = tmp_path / "record.json"
    target.mkdir()
    with pytest.raises(InputError, match=f"^{target}: cannot write release record: "):
        write_atomically(target, "{}", "release record")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["record.json"]


@pytest.mark.parametrize(
    ("size", "text"),
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1536, "1.5 KiB"),
        (50 << 20, "50.0 MiB"),
        (3 << 30, "3.0 GiB"),
        (5 << 40, "5.0 TiB"),
        (2048 << 40, "2048.0 TiB"),
    ],
)
def test_human_size(size: int, text: str) -> None:
    assert human_size(size) == text
