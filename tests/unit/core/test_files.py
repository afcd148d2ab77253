"""The one atomic writer and the one size formatter every stage uses."""

from __future__ import annotations

import os
import stat
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


def test_a_new_file_gets_the_permissions_open_would_give(tmp_path: Path) -> None:
    previous = os.umask(0o022)
    try:
        write_atomically(tmp_path / "report.json", "{}")
    finally:
        os.umask(previous)
    assert stat.S_IMODE((tmp_path / "report.json").stat().st_mode) == 0o644


def test_a_replaced_file_keeps_its_permissions(tmp_path: Path) -> None:
    target = tmp_path / "gpuship.lock"
    target.write_text("old\n")
    target.chmod(0o640)
    write_atomically(target, "new\n")
    assert (target.read_text(), stat.S_IMODE(target.stat().st_mode)) == ("new\n", 0o640)


def test_a_symlink_is_refused_and_its_target_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A checkout may hold `gpuship.sarif -> ~/.bashrc` or `reports -> /etc`.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    real = tmp_path / "elsewhere" / "verify.json"
    real.write_text("old\n")
    (tmp_path / "verify.json").symlink_to(real)
    (tmp_path / "reports").symlink_to(tmp_path / "elsewhere")
    dangling = tmp_path / "new.json"
    dangling.symlink_to(tmp_path / "elsewhere" / "created.json")
    for path in (Path("verify.json"), tmp_path / "verify.json", Path("reports/verify.json")):
        with pytest.raises(InputError, match=r"refusing to write report through the symbolic"):
            write_atomically(path, "new\n", "report")
    with pytest.raises(InputError, match=r"symbolic link .*new.json"):
        write_atomically(dangling, "new\n", "report")
    assert real.read_text() == "old\n"
    assert sorted(p.name for p in real.parent.iterdir()) == ["verify.json"]


def test_stream_names_and_links_above_the_working_directory_are_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "linked").symlink_to(tmp_path / "real")  # as macOS's /tmp -> /private/tmp
    work = tmp_path / "linked" / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    write_atomically(tmp_path / "linked" / "report.json", "x\n")
    write_atomically(Path("report.json"), "y\n")
    assert (tmp_path / "real" / "report.json").read_text() == "x\n"
    assert (tmp_path / "real" / "work" / "report.json").read_text() == "y\n"
    write_atomically(Path("/dev/stdout"), "")  # a link to /proc/self/fd/1


def test_a_fifo_is_written_to_not_replaced(tmp_path: Path) -> None:
    # `--output /dev/stdout` or a named pipe: renaming over it would put a plain file where
    # the device or pipe was (once, /dev/null itself).
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # a reader, as `cat pipe` would be
    try:
        write_atomically(fifo, "streamed\n")
        assert os.read(reader, 100) == b"streamed\n"
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_a_character_device_is_written_to_not_replaced() -> None:
    before = os.stat("/dev/null")
    write_atomically(Path("/dev/null"), "discarded\n")
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev


def test_a_fifo_nobody_reads_is_an_error_not_a_wait(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match=f"^{fifo}: cannot write report: No such device"):
        write_atomically(fifo, "{}", "report")
