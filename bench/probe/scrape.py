"""bench/probe/scrape.py: what reading the server's queue costs the probe.

1. Parsing: `read_gauge` (the queue gauge's lines only, through prometheus_client's parser)
   against prometheus_client's parser over the whole answer (what a scraper that reads every
   metric does), on a vLLM-sized exposition. Median of 50 reads, five rounds.
2. The load generator: dispatch lag of `run_load` at 500 requests/s against the stand-in
   model server, with and without a scraper reading that exposition every 100 ms (five times
   the default rate) from another process, alternated, three rounds each.

Run: `python bench/probe/scrape.py` from the repository root (the stand-in is built with gcc).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

from prometheus_client.parser import text_string_to_metric_families

from bed.probe_server import build_server, free_port
from gpuship.http.load import Arrival, RequestSpec, Target, run_load
from gpuship.http.metrics import read_gauge, scraping
from gpuship.probe.servers import queue_metrics

BUILD_CACHE = Path(__file__).resolve().parents[2] / "tests" / ".build"


def vllm_sized() -> str:
    """An exposition shaped like vLLM's: gauges, counters and ~20 histograms of ~20 buckets
    for 4 engines (about 100 KB), the queue gauge among them."""
    lines = []
    for h in range(20):
        name = f"vllm:hist_{h}_seconds"
        lines += [f"# HELP {name} A histogram.", f"# TYPE {name} histogram"]
        for engine in range(4):
            labels = f'engine="{engine}",model_name="meta-llama/Llama-3.1-8B-Instruct"'
            for le in [0.001 * 2**i for i in range(20)] + ["+Inf"]:
                lines.append(f'{name}_bucket{{{labels},le="{le}"}} {engine * 7 + h}.0')
            lines += [f"{name}_sum{{{labels}}} 12.5", f"{name}_count{{{labels}}} 40.0"]
    lines += ["# HELP vllm:num_requests_waiting Waiting.", "# TYPE vllm:num_requests_waiting gauge"]
    lines += [f'vllm:num_requests_waiting{{engine="{e}",model_name="m"}} 3.0' for e in range(4)]
    return "\n".join(lines) + "\n"


def parse_cost(text: str) -> None:
    names = queue_metrics(None)
    for label, read in (
        ("read_gauge (its lines only)", lambda: read_gauge(text, names)),
        ("prometheus_client, whole answer", lambda: list(text_string_to_metric_families(text))),
    ):
        medians = []
        for _ in range(5):
            times = []
            for _ in range(50):
                start = time.perf_counter()
                read()
                times.append(time.perf_counter() - start)
            medians.append(statistics.median(times) * 1000)
        print(f"{label}: median per read {min(medians):.3f} to {max(medians):.3f} ms (5 rounds)")


def lag(target: Target, metrics_url: str | None) -> tuple[float, float]:
    arrivals = [Arrival(index / 500, 0, 0) for index in range(2500)]
    context = (
        scraping(metrics_url, queue_metrics(None), 0.1, 1 << 24, 600)
        if metrics_url
        else nullcontext()
    )
    with context:
        result = run_load(target, arrivals, [RequestSpec("GET", "/")], 256, 10)
    lags = sorted((s.dispatched - s.intended) * 1000 for s in result.samples)
    return lags[len(lags) // 2], lags[int(len(lags) * 0.99)]


def main() -> None:
    text = vllm_sized()
    print(f"exposition: {len(text)} bytes, {text.count(chr(10))} lines")
    parse_cost(text)
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "metrics").write_text(text)
        metrics_port = free_port()
        page = subprocess.Popen(
            [sys.executable, "-m", "http.server", str(metrics_port), "--bind", "127.0.0.1"],
            cwd=folder,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port = free_port()
        server = subprocess.Popen(
            [str(build_server(BUILD_CACHE))],
            env={"PORT": str(port), "LATENCY_MS": "5"},
            stdout=subprocess.DEVNULL,
        )
        try:
            time.sleep(0.5)
            target = Target("127.0.0.1", port)
            url = f"http://127.0.0.1:{metrics_port}/metrics"
            for round_ in range(3):
                for label, metrics in (("without scraping", None), ("scraping every 100 ms", url)):
                    p50, p99 = lag(target, metrics)
                    figures = f"dispatch lag p50 {p50:.2f} ms, p99 {p99:.2f} ms"
                    print(f"round {round_ + 1} {label}: {figures}")
        finally:
            for process in (page, server):
                process.kill()
                process.wait()


if __name__ == "__main__":
    main()
