"""registry/artifact.read_each: the bounded concurrent reader of release records and fleet
inventory entries."""

from __future__ import annotations

import threading
import time

import pytest

from gpuship.registry.artifact import READ_WORKERS, read_each


def test_results_come_in_the_order_of_the_tags_whatever_order_they_finish_in():
    tags = [f"t{n}" for n in range(20)]

    def read(tag: str) -> str:
        time.sleep(0.002 * (20 - int(tag[1:])))  # the first tags finish last
        return tag.upper()

    assert read_each(read, tags) == [tag.upper() for tag in tags]


def test_no_more_than_read_workers_run_at_once():
    running, most = 0, 0
    lock = threading.Lock()

    def read(tag: str) -> str:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.01)
        with lock:
            running -= 1
        return tag

    read_each(read, [str(n) for n in range(3 * READ_WORKERS)])
    assert 1 < most <= READ_WORKERS


def test_an_error_is_raised_and_the_reads_not_yet_started_never_start():
    started: list[str] = []

    def read(tag: str) -> str:
        started.append(tag)
        if tag == "0":
            raise ValueError("broken entry")
        time.sleep(0.2)
        return tag

    with pytest.raises(ValueError, match="broken entry"):
        read_each(read, [str(n) for n in range(10 * READ_WORKERS)])
    assert len(started) <= 2 * READ_WORKERS
