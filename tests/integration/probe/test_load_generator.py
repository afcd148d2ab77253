"""The open-loop load generator against the stand-in model server run on this host."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from bed.probe_server import build_server, free_port
from gpuship.http.load import Arrival, RequestSpec, Target, run_load
from gpuship.probe.config import SloConfig
from gpuship.probe.metrics import step_metrics
from gpuship.probe.schedule import Step

pytestmark = pytest.mark.integration

BUILD_CACHE = Path(__file__).resolve().parents[2] / ".build"
GET = RequestSpec("GET", "/")


@pytest.fixture
def server() -> Iterator[Callable[[Mapping[str, str]], Target]]:
    """Start the stand-in server on a free port with the given settings."""
    binary = build_server(BUILD_CACHE)
    started: list[subprocess.Popen[bytes]] = []

    def start(settings: Mapping[str, str]) -> Target:
        port = free_port()
        process = subprocess.Popen(
            [str(binary)],
            env={**os.environ, **settings, "PORT": str(port)},
            stdout=subprocess.PIPE,
        )
        started.append(process)
        assert process.stdout is not None
        while b"ready" not in process.stdout.readline():
            assert process.poll() is None, "the stand-in server exited"
        return Target("127.0.0.1", port)

    yield start
    for process in started:
        process.kill()
        process.wait()


def at_rate(rate: float, count: int) -> list[Arrival]:
    return [Arrival(index / rate, 0, 0) for index in range(count)]


def test_a_stalled_server_shows_in_latency_from_the_intended_send(
    server: Callable[[Mapping[str, str]], Target],
) -> None:
    # 100 ms per request, one at a time, while the schedule asks for one every 20 ms: the
    # queue grows by 80 ms a request. A closed-loop tool would report 100 ms throughout.
    target = server({"LATENCY_MS": "100"})
    result = run_load(target, at_rate(50, 15), [GET], concurrency=1, timeout_s=10)
    samples = result.samples
    service = [s.done - s.sent for s in samples]
    assert all(0.09 < t < 0.3 for t in service), service
    assert samples[-1].latency > 14 * 0.08 + 0.1 - 0.05
    assert [s.intended for s in samples] == sorted(s.intended for s in samples)
    figures = step_metrics(Step("50/s", 50, 0.3), samples, SloConfig())
    assert figures.capped >= 13  # waited for the concurrency cap, and that counted


def test_streamed_completions_give_ttft_itl_and_tokens(
    server: Callable[[Mapping[str, str]], Target],
) -> None:
    target = server({"LATENCY_MS": "40", "TOKEN_MS": "25"})
    body = json.dumps({"prompt": "hi", "max_tokens": 6, "stream": True}).encode()
    spec = RequestSpec("POST", "/v1/completions", body, streaming=True)
    result = run_load(target, at_rate(10, 5), [spec], concurrency=8, timeout_s=10)
    for sample in result.samples:
        assert sample.error == "" and sample.tokens == 6
        assert sample.ttft is not None and 0.035 < sample.ttft < 0.2
        # One token every 25 ms. Under load the server's writes can bunch (a 60 ms gap, then
        # one of 0.05 ms): each gap is bounded, and their median and sum are the server's.
        assert len(sample.itl) == 5 and all(0 <= gap < 0.2 for gap in sample.itl), sample.itl
        assert 0.015 < statistics.median(sample.itl) < 0.1, sample.itl
        assert 0.1 < sum(sample.itl) < 0.5, sample.itl
    figures = step_metrics(Step("10/s", 10, 0.5), result.samples, SloConfig(goodput_ttft_ms=1000))
    assert figures.output_tokens_per_s == pytest.approx(60)
    assert figures.goodput == pytest.approx(10)
    assert figures.tpot_p99 is not None and 0.02 < figures.tpot_p99 < 0.1


@pytest.mark.parametrize(
    ("stream", "error", "token"),
    [
        ("crlf", "", True),  # CRLF line ends are SSE too: a good answer
        ("none", "no-tokens", False),
        ("keepalive", "no-tokens", False),
        ("empty", "no-tokens", False),  # events, a usage chunk claiming 6 tokens, no text
        ("garbage", "not-sse", False),
        ("badjson", "bad-event", True),
        ("error", "error-event", True),
        ("nodone", "", True),  # no [DONE] after the tokens (TGI before its PR #2221)
        ("cut", "protocol", True),  # the connection closed before the body's end
    ],
)
def test_a_stream_that_is_no_good_answer_is_a_failed_request(
    server: Callable[[Mapping[str, str]], Target], stream: str, error: str, token: bool
) -> None:
    # Each comes with a 200: only the stream tells a failed answer from a good one.
    target = server({"LATENCY_MS": "20", "TOKEN_MS": "5", "STREAM": stream})
    body = json.dumps({"messages": [], "max_tokens": 6, "stream": True}).encode()
    spec = RequestSpec("POST", "/v1/chat/completions", body, streaming=True)
    result = run_load(target, at_rate(20, 4), [spec], concurrency=4, timeout_s=10)
    assert [(s.status, s.error) for s in result.samples] == [(200, error)] * 4
    # A time to first token only ever comes from a chunk with text.
    assert all((s.first_token is not None) == token for s in result.samples)
    figures = step_metrics(Step("20/s", 20, 0.2), result.samples, SloConfig())
    assert figures.ok == (4 if not error else 0)
    assert figures.error_kinds == (((error, 4),) if error else ())
    assert bool(figures.ttft) == (not error)


def test_shed_requests_and_a_dead_server_are_errors_of_their_kind(
    server: Callable[[Mapping[str, str]], Target],
) -> None:
    # Room for one request in flight: the others are shed with 429.
    target = server(
        {
            "LATENCY_MS": "200",
            "MEM_TOTAL_MIB": "100",
            "MEM_BASE_MIB": "0",
            "SHED_STATUS": "429",
            "MEM_PER_REQUEST_MIB": "60",
        }
    )
    result = run_load(target, at_rate(100, 5), [GET], concurrency=8, timeout_s=10)
    assert (
        sorted((s.error, s.status) for s in result.samples) == [("", 200)] + [("status", 429)] * 4
    )
    nobody = Target("127.0.0.1", free_port())
    result = run_load(nobody, at_rate(100, 3), [GET], concurrency=8, timeout_s=5)
    assert [s.error for s in result.samples] == ["connect"] * 3


def test_a_generator_that_falls_behind_its_schedule_says_so(
    server: Callable[[Mapping[str, str]], Target],
) -> None:
    # A thread that holds the interpreter for 50 ms at a time delays the event loop: the
    # requests go out late, and the dispatch lag shows it.
    target = server({"LATENCY_MS": "1"})
    stop = threading.Event()
    previous = sys.getswitchinterval()

    def hog() -> None:
        while not stop.is_set():
            sum(range(10_000))

    sys.setswitchinterval(0.05)
    thread = threading.Thread(target=hog)
    thread.start()
    try:
        result = run_load(target, at_rate(200, 200), [GET], concurrency=64, timeout_s=10)
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(previous)
    figures = step_metrics(Step("200/s", 200, 1), result.samples, SloConfig())
    assert figures.lag_max > 0.02, figures.lag_max


def test_on_schedule_when_nothing_competes(
    server: Callable[[Mapping[str, str]], Target],
) -> None:
    target = server({"LATENCY_MS": "1"})
    started = time.monotonic()
    result = run_load(target, at_rate(100, 100), [GET], concurrency=16, timeout_s=10)
    assert time.monotonic() - started < 3
    figures = step_metrics(Step("100/s", 100, 1), result.samples, SloConfig())
    assert figures.ok == 100
    # Late by at most a few ms here too (a shared machine), never by the step's length.
    assert figures.lag_max < 0.5
    # Past select(2)'s 1024 descriptors the loop is epoll's: the same load still runs.
    wide = run_load(target, at_rate(100, 50), [GET], concurrency=2000, timeout_s=10)
    assert [s.error for s in wide.samples] == [""] * 50
