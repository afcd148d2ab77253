"""Reading a server's queue from its Prometheus endpoint: the stand-in model server run on
this host, with a queue of known length, and endpoints that cannot be read."""

from __future__ import annotations

import os
import subprocess
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import pytest

from bed.probe_server import build_server, free_port
from gpuship.http.metrics import scraping

pytestmark = pytest.mark.integration

BUILD_CACHE = Path(__file__).resolve().parents[2] / ".build"
KNOWN = ("vllm:num_requests_waiting", "tgi_queue_size", "nv_inference_pending_request_count")


@pytest.fixture
def server() -> Iterator[Callable[[Mapping[str, str]], str]]:
    """Start the stand-in on a free port with the given settings; yields its base URL."""
    binary = build_server(BUILD_CACHE)
    started: list[subprocess.Popen[bytes]] = []

    def start(settings: Mapping[str, str]) -> str:
        port = free_port()
        process = subprocess.Popen(
            [str(binary)], env={**os.environ, **settings, "PORT": str(port)}, stdout=subprocess.PIPE
        )
        started.append(process)
        assert process.stdout is not None
        while b"ready" not in process.stdout.readline():
            assert process.poll() is None, "the stand-in server exited"
        return f"http://127.0.0.1:{port}"

    yield start
    for process in started:
        process.kill()
        process.wait()


def test_the_server_queue_is_read_while_it_holds_requests(
    server: Callable[[Mapping[str, str]], str],
) -> None:
    # One request served at a time for 1.5 s; four sent at once: three wait in its queue.
    base = server({"MAX_RUNNING": "1", "LATENCY_MS": "1500"})
    senders = [
        threading.Thread(target=lambda: urllib.request.urlopen(f"{base}/", timeout=30).read())
        for _ in range(4)
    ]
    with scraping(f"{base}/metrics", KNOWN, 0.1, 1 << 20, 600) as scraper:
        scraper.mark("load")
        for sender in senders:
            sender.start()
        time.sleep(1.0)
        scraper.mark("")
        for sender in senders:
            sender.join()
    trace = scraper.trace()
    assert (trace.metric, trace.kind, trace.failures) == ("vllm:num_requests_waiting", "gauge", 0)
    assert trace.peaks["load"][1] == 3.0
    assert trace.scrapes >= 10
    assert max(value or 0 for _, value in trace.points) == 3.0


def test_an_endpoint_that_cannot_be_read_is_counted_with_its_first_reason(
    server: Callable[[Mapping[str, str]], str],
) -> None:
    missing = server({"METRICS": "0"})
    with scraping(f"{missing}/metrics", KNOWN, 0.05, 1 << 20, 600) as scraper:
        time.sleep(0.3)
    trace = scraper.trace()
    assert trace.metric is None and trace.failures == trace.scrapes >= 3
    assert trace.error == f"{missing}/metrics answered 404"

    nobody = f"http://127.0.0.1:{free_port()}/metrics"
    with scraping(nobody, KNOWN, 0.05, 1 << 20, 600) as scraper:
        time.sleep(0.2)
    assert (scraper.trace().error or "").startswith(f"{nobody}: ")


def test_an_answer_past_limits_metrics_max_bytes_is_a_failed_read(
    server: Callable[[Mapping[str, str]], str],
) -> None:
    base = server({})
    body = urllib.request.urlopen(f"{base}/metrics", timeout=5).read()
    with scraping(f"{base}/metrics", KNOWN, 0.05, len(body), 600) as scraper:
        time.sleep(0.2)
    assert scraper.trace().failures == 0 and scraper.trace().metric is not None
    with scraping(f"{base}/metrics", KNOWN, 0.05, len(body) - 1, 600) as scraper:
        time.sleep(0.2)
    trace = scraper.trace()
    assert trace.metric is None and trace.failures == trace.scrapes
    assert trace.error == (
        f"{base}/metrics: larger than {len(body) - 1} bytes (limits.metrics-max-bytes)"
    )
