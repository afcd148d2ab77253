"""bench/probe: the probe's load generator against wrk and hey, on the same stand-in server.

1. Accuracy. The stand-in model server (tests/probe_server) answers after a known delay:
   LATENCY_MS + uniform [0, JITTER_MS). wrk (Debian 4.1, closed loop, `--latency`) and the
   probe's generator (open loop, constant rate) each load it; their p50/p90/p99 are compared
   with each other. The rate of the open-loop run stays well under the server's capacity, so
   no queue forms and both tools should see the server's own distribution.
2. Ceiling. With no delay in the server, the generator runs at rising rates on one core
   (taskset): achieved rate, its own dispatch lag (the rate where its p99 passes a few ms is
   its ceiling), latency against a server that answers at once, and the share of its core it
   used (busy wait before each send included).
hey (Debian 0.1.4, one worker rate-limited to the same 100/s) is the like-for-like reference
for timing: the same rate, the same idle gaps between requests, timed from its own send.

Server and generators are pinned to different cores (`taskset`) when the machine has two,
and run at the highest scheduling priority (their own autogroup at nice -20, as root).
Prints one JSON line per measurement and a Markdown table; `--json FILE` keeps the lines.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))

from bed.probe_server import build_server, free_port  # noqa: E402
from gpuship.http.load import Arrival, RequestSpec, Target, run_load  # noqa: E402
from gpuship.probe.stats import percentile  # noqa: E402

UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0}


def start_server(binary: Path, settings: dict[str, str], core: str | None) -> tuple[subprocess.Popen[bytes], Target]:
    port = free_port()
    argv = [str(binary)] if core is None else ["taskset", "-c", core, str(binary)]
    # Enough memory for any concurrency: this bench measures latency, not shedding.
    env = {**os.environ, "MEM_TOTAL_MIB": "10000000", "MEM_BASE_MIB": "0", **settings, "PORT": str(port)}
    process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE)
    assert process.stdout is not None
    while b"ready" not in process.stdout.readline():
        if process.poll() is not None:
            raise SystemExit("the stand-in server exited")
    return process, Target("127.0.0.1", port)


def wrk(target: Target, connections: int, seconds: int, core: str | None) -> dict[str, float]:
    argv = ["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency", f"http://{target.authority}/"]
    if core is not None:
        argv = ["taskset", "-c", core, *argv]
    output = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    found = {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))}  # type: ignore[union-attr]
    for name, label in (("p50", "50%"), ("p90", "90%"), ("p99", "99%")):
        value, unit = re.search(rf"^\s+{label}\s+([\d.]+)(us|ms|s)\s*$", output, re.M).groups()  # type: ignore[union-attr]
        found[name] = float(value) * UNITS[unit] * 1000
    return found


def hey(target: Target, rate: int, seconds: int, core: str | None) -> dict[str, float]:
    """hey (Debian 0.1.4) with one worker limited to `rate` queries/s: the same rate and the
    same idle gaps between requests as the open-loop run, timed from its own send."""
    argv = ["hey", "-z", f"{seconds}s", "-c", "1", "-q", str(rate), f"http://{target.authority}/"]
    if core is not None:
        argv = ["taskset", "-c", core, *argv]
    output = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    found = {"rps": float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1))}  # type: ignore[union-attr]
    for name, label in (("p50", "50%"), ("p90", "90%"), ("p99", "99%")):
        value = re.search(rf"^\s+{label} in ([\d.]+) secs", output, re.M).group(1)  # type: ignore[union-attr]
        found[name] = float(value) * 1000
    return found


def ours(target: Target, rate: float, seconds: float, concurrency: int = 256) -> dict[str, float]:
    count = int(rate * seconds)
    arrivals = [Arrival(i / rate, 0, 0) for i in range(count)]
    cpu = time.process_time()
    result = run_load(target, arrivals, [RequestSpec("GET", "/")], concurrency, timeout_s=30)
    cpu = time.process_time() - cpu
    ok = sorted(s.latency for s in result.samples if not s.error)
    # From the actual send, as wrk times it: the generator's own lag left out.
    service = sorted(s.done - s.sent for s in result.samples if not s.error)
    lags = sorted(s.dispatched - s.intended for s in result.samples)
    return {
        "rate": rate,
        "achieved_rps": len(ok) / result.duration,
        "errors": len(result.samples) - len(ok),
        "p50": percentile(ok, 0.5) * 1000,
        "p90": percentile(ok, 0.9) * 1000,
        "p99": percentile(ok, 0.99) * 1000,
        "service_p50": percentile(service, 0.5) * 1000,
        "service_p90": percentile(service, 0.9) * 1000,
        "service_p99": percentile(service, 0.99) * 1000,
        "lag_p99_ms": percentile(lags, 0.99) * 1000,
        "cpu_s": cpu,
        # Includes the busy wait before each send (http/load.py _EARLY_WAKE_S).
        "cpu_share": cpu / result.duration,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--rates", default="250,500,1000,2000,3000,4000")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    # The build VM is shared with other jobs: run the server and both generators at the
    # highest priority (root), so what is measured is the tools, not the neighbours. With
    # autogroup scheduling a nice value counts only inside a session's group: run.sh starts
    # this script in a session of its own (setsid), whose group gets nice -20 here.
    with contextlib.suppress(OSError):
        Path("/proc/self/autogroup").write_text("-20")
        os.nice(-20)
    two_cores = (os.cpu_count() or 1) >= 2
    server_core, client_core = ("0", "1") if two_cores else (None, None)
    if client_core is not None:
        os.sched_setaffinity(0, {int(client_core)})
    binary = build_server(ROOT / "tests" / ".build")
    lines = []

    server, target = start_server(binary, {"LATENCY_MS": "10", "JITTER_MS": "10"}, server_core)
    try:
        reference = wrk(target, 8, args.seconds, client_core)
        paced = hey(target, 100, args.seconds, client_core)
        measured = ours(target, 100, args.seconds)
    finally:
        server.kill()
    lines.append({"kind": "accuracy", "wrk": reference, "hey": paced, "gpuship": measured})

    server, target = start_server(binary, {"LATENCY_MS": "0"}, server_core)
    try:
        lines.append({"kind": "wrk-ceiling", "c1": wrk(target, 1, args.seconds, client_core), "c32": wrk(target, 32, args.seconds, client_core)})
        for rate in (float(r) for r in args.rates.split(",")):
            lines.append({"kind": "ceiling", **ours(target, rate, min(args.seconds, 5))})
    finally:
        server.kill()
    for line in lines:
        print(json.dumps(line))
    if args.json:
        args.json.write_text("".join(json.dumps(line) + "\n" for line in lines))
    print(markdown(lines))


def markdown(lines: list[dict]) -> str:  # type: ignore[type-arg]
    accuracy = lines[0]
    rows = [
        "| figure | wrk (closed loop, 8 conn.) | hey (1 worker, 100/s) | gpuship (open loop, 100/s) from its send | from the schedule | vs hey |",
        "|---|---|---|---|---|---|",
    ]
    for name in ("p50", "p90", "p99"):
        a, h = accuracy["wrk"][name], accuracy["hey"][name]
        b, c = accuracy["gpuship"][f"service_{name}"], accuracy["gpuship"][name]
        rows.append(
            f"| {name} | {a:.2f} ms | {h:.2f} ms | {b:.2f} ms | {c:.2f} ms | {b - h:+.2f} ms ({(b - h) / h:+.1%}) |"
        )
    rows.append(f"\ngenerator dispatch lag p99 during the accuracy run: {accuracy['gpuship']['lag_p99_ms']:.2f} ms")
    ceiling = ["| target rate | achieved | errors | p50 | p99 | dispatch lag p99 | CPU of its core |", "|---|---|---|---|---|---|---|"]
    for line in lines[2:]:
        ceiling.append(
            f"| {line['rate']:.0f}/s | {line['achieved_rps']:.0f}/s | {line['errors']} | {line['p50']:.2f} ms | "
            f"{line['p99']:.2f} ms | {line['lag_p99_ms']:.2f} ms | {line['cpu_share']:.0%} |"
        )
    wrk_line = lines[1]
    return "\n".join(
        [
            *rows,
            "",
            f"wrk against the zero-delay server: 1 connection {wrk_line['c1']['rps']:.0f} req/s, p50 {wrk_line['c1']['p50']:.3f} ms; "
            f"32 connections {wrk_line['c32']['rps']:.0f} req/s",
            "",
            *ceiling,
        ]
    )


if __name__ == "__main__":
    main()
