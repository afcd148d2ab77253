"""Queues, cold start and the slowest requests on data: the client's queue from request
moments, the servers the probe knows, model-load log lines, their SLOs and how the report
shows them."""

from __future__ import annotations

import random

import pytest
from probe_builders import latencies, sample, trial

from gpuship.http.load import LoadResult, Sample
from gpuship.http.metrics import ServerTrace
from gpuship.probe import rules
from gpuship.probe.analysis import image_figures
from gpuship.probe.config import ProbeConfig
from gpuship.probe.gate import GateStatus, judge
from gpuship.probe.queue import client_queue
from gpuship.probe.report import probe_report
from gpuship.probe.run import LOAD, FirstResponse, Trial
from gpuship.probe.schedule import Step
from gpuship.probe.servers import QUEUE_GAUGES, model_load_seconds, queue_metrics
from gpuship.report.markdown import render_markdown

STEPS = [Step("50/s", 50, 10)]


def request(at: float, dispatched: float, sent: float, done: float, queued: bool) -> Sample:
    return Sample(0, at, dispatched, sent, None, None, done, 200, "", queued=queued)


def load(samples: list[Sample], duration: float = 1.0) -> LoadResult:
    return LoadResult(origin=0.0, duration=duration, samples=tuple(samples))


# --- the client's queue ---------------------------------------------------------------------


def test_in_flight_and_waiting_follow_the_slots() -> None:
    # Cap 2: A and B hold the slots; C waits from 0.1 until A ends at 0.5 and takes its slot.
    samples = [
        request(0.0, 0.0, 0.0, 0.5, queued=False),
        request(0.05, 0.05, 0.05, 0.9, queued=False),
        request(0.1, 0.1, 0.5, 0.8, queued=True),
    ]
    queue = client_queue(load(samples), 100)
    assert (queue.peak_in_flight, queue.peak_waiting) == (2, 1)
    assert queue.width == 0.1
    # Buckets of 0.1 s: one waits in [0.1, 0.5); A's slot goes to C at 0.5 (end before start).
    assert queue.waiting == (0, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0)
    assert queue.in_flight == (2, 2, 2, 2, 2, 2, 2, 2, 1, 0, 0)
    assert queue.slowest[:2] == pytest.approx((0.85, 0.7))
    assert queue.slowest[2:] == (None,) * 9


def test_an_ending_hands_its_slot_over_without_counting_both() -> None:
    samples = [
        request(0.0, 0.0, 0.0, 0.3, queued=False),
        request(0.3, 0.3, 0.3, 0.6, queued=False),
    ]
    assert client_queue(load(samples), 100).peak_in_flight == 1


def test_the_queue_series_is_bounded_whatever_the_request_count() -> None:
    # 100,000 requests over an hour: at most `points` buckets, and the exact peaks.
    rng = random.Random(4)
    samples = []
    for index in range(100_000):
        at = index * 0.036
        samples.append(request(at, at, at, at + rng.uniform(0.01, 0.05), queued=False))
    samples.append(request(1800.0, 1800.0, 1800.0, 1800.2, queued=False))  # 3 at once there
    samples.append(request(1800.0, 1800.0, 1800.1, 1800.2, queued=True))
    queue = client_queue(load(samples, duration=3600.0), 600)
    assert len(queue.in_flight) == len(queue.waiting) == len(queue.slowest) <= 600
    assert queue.peak_waiting == 1
    assert queue.peak_in_flight >= 2
    assert max(queue.waiting) == 1  # the peak survives every merge of buckets


# --- the slowest requests ---------------------------------------------------------------------


def test_the_slowest_requests_with_their_trial_step_and_start() -> None:
    steps = [Step("5/s", 5, 10), Step("10/s", 10, 10)]
    first = [sample(0.010, step=0, at=0.0), sample(0.900, step=1, at=12.5)]
    first.append(sample(0.002, step=-1, at=0.0))  # warm-up: not a load step
    second = [sample(0.500, step=0, at=3.0, status=503, error="status")]
    second += [sample(0.020, step=1, at=11.0)]
    trials = [trial("candidate", 0, first, steps), trial("candidate", 1, second, steps)]
    result = image_figures("candidate", trials, steps, ProbeConfig(slowest_requests=2))
    slowest = result.queue.slowest
    assert [(s.trial, s.step, s.start) for s in slowest] == [(1, "10/s", 12.5), (2, "5/s", 3.0)]
    assert [s.latency for s in slowest] == pytest.approx([0.9, 0.5])
    assert (slowest[1].status, slowest[1].error) == (503, "status")
    # The step's max is over successful requests, like its percentiles.
    assert [s.max_latency for s in result.steps] == pytest.approx([0.010, 0.9])


# --- what is known of servers ---------------------------------------------------------------


def test_the_known_gauges_have_their_sources() -> None:
    assert [g.metric for g in QUEUE_GAUGES] == [
        "vllm:num_requests_waiting",
        "tgi_queue_size",
        "nv_inference_pending_request_count",
    ]
    assert all(g.source for g in QUEUE_GAUGES)
    assert queue_metrics("my_queue") == ("my_queue",)


# --- model-load time from the log -------------------------------------------------------------


@pytest.mark.parametrize(
    ("log", "seconds"),
    [
        ("INFO ... Model loading took 14.9651 GiB memory and 12.345678 seconds\n", 12.345678),
        ("INFO ... Model loading took 14.9651 GiB and 8.500000 seconds\n", 8.5),
        ("shard 0: Shard ready in 21.3s\nshard 1: Shard ready in 22.75s\n", 22.75),
        ("Shard ready in 812.5ms\n", 0.8125),
        ("model server ready\n", None),
    ],
)
def test_model_load_time_from_vllm_and_tgi_lines(log: str, seconds: float | None) -> None:
    assert model_load_seconds(log, None) == seconds


def test_model_load_time_from_a_pattern_of_ones_own() -> None:
    log = "loaded weights in 4100 ms\nloaded weights in 3900 ms\n"
    assert model_load_seconds(log, r"weights in (?P<ms>\d+) ms") == 4.1
    assert model_load_seconds("loaded in x.y.z s", r"in (?P<s>[xyz.]+) s") is None


# --- SLOs ---------------------------------------------------------------------------------------


def server_trace(peak: float | None, error: str | None = None) -> ServerTrace:
    return ServerTrace(
        url="http://127.0.0.1:8000/metrics",
        names=queue_metrics(None),
        origin=100.0,
        metric=None if peak is None else "vllm:num_requests_waiting",
        kind=None if peak is None else "gauge",
        scrapes=20,
        failures=0 if error is None else 20,
        error=error,
        peaks={} if peak is None else {LOAD: (1.0, peak), "shortage": (12.0, 90.0)},
        width=0.5,
        points=((0.0, 0.0), (0.5, peak)),
    )


def probed(probe: ProbeConfig, **trial_fields: object) -> list[Trial]:
    from dataclasses import replace

    base = trial("candidate", 0, latencies([0.02] * 100), STEPS)
    return [replace(base, **trial_fields)]  # type: ignore[arg-type]


def checks_of(probe: ProbeConfig, trials: list[Trial]) -> dict[str, tuple[GateStatus, str]]:
    result = image_figures("candidate", trials, STEPS, probe)
    checks, _ = judge(result, None, probe)
    return {c.rule: (c.status, c.message) for c in checks}


def test_the_server_queue_slo_is_judged_on_the_load_steps_peak() -> None:
    probe = ProbeConfig.model_validate({"slo": {"server-queue-max": 4}})
    # The shortage's 90 is past the SLO, but the SLO is on the load steps.
    ok = checks_of(probe, probed(probe, server=server_trace(4.0)))
    assert ok[rules.SERVER_QUEUE] == (
        GateStatus.OK,
        "vllm:num_requests_waiting peaked at 4 during the load steps (<= 4)",
    )
    over = checks_of(probe, probed(probe, server=server_trace(4.5)))
    assert over[rules.SERVER_QUEUE][0] is GateStatus.FAIL


def test_an_unknown_server_queue_warns_and_only_says_so_unasked_when_an_slo_needs_it() -> None:
    unread = server_trace(None, error="http://127.0.0.1:8000/metrics answered 404")
    quiet = ProbeConfig()
    assert rules.SERVER_METRICS not in checks_of(quiet, probed(quiet, server=unread))
    assert rules.SERVER_QUEUE not in checks_of(quiet, probed(quiet, server=unread))
    asked = ProbeConfig.model_validate({"queue-metric": "vllm:num_requests_waiting"})
    assert (
        checks_of(asked, probed(asked, server=unread))[rules.SERVER_METRICS][0] is GateStatus.WARN
    )
    slo = ProbeConfig.model_validate({"slo": {"server-queue-max": 4}})
    status, message = checks_of(slo, probed(slo, server=server_trace(None)))[rules.SERVER_QUEUE]
    assert status is GateStatus.WARN
    assert "exposes none of vllm:num_requests_waiting, tgi_queue_size" in message


def test_the_cold_start_slo_uses_the_longest_trial_and_names_the_model_load() -> None:
    probe = ProbeConfig.model_validate({"slo": {"cold-start-max-s": 30}})
    slow = probed(probe, first_response=FirstResponse(31.5), model_load_s=25.0)
    assert checks_of(probe, slow)[rules.COLD_START] == (
        GateStatus.FAIL,
        "first successful response 31.50 s after docker start (> 30 s); the model loaded in 25.0 s",
    )
    fast = probed(probe, first_response=FirstResponse(12.0))
    assert checks_of(probe, fast)[rules.COLD_START][0] is GateStatus.OK
    failed = probed(probe, first_response=FirstResponse(None, "the first request failed: 500"))
    assert checks_of(probe, failed)[rules.COLD_START] == (
        GateStatus.WARN,
        "cold start unknown: the first request failed: 500",
    )


def test_the_summary_shows_queues_cold_start_and_the_slowest_requests() -> None:
    probe = ProbeConfig.model_validate({"slowest-requests": 2})
    trials = probed(
        probe, server=server_trace(3.0), first_response=FirstResponse(4.25), model_load_s=2.5
    )
    result = image_figures("candidate", trials, STEPS, probe)
    checks, comparisons = judge(result, None, probe)
    report = probe_report("probe", [result], checks, comparisons, trials)
    titles = [table.title for table in report.tables]
    assert "Cold start and queues (queues: their peak during the load steps)" in titles
    queue = next(t for t in report.tables if t.title.startswith("Cold start"))
    peak = str(result.queue.peak_in_flight)
    assert queue.rows == (
        ("candidate", "4.25 s", "2.50 s", peak, "0", "3 (vllm:num_requests_waiting)"),
    )
    slowest = next(t for t in report.tables if t.title.startswith("Slowest"))
    assert len(slowest.rows) == 2 and slowest.rows[0][-1] == "ok (200)"
    assert report.outputs["cold-start-s"] == "4.25"
    assert report.outputs["server-queue-peak"] == "3"
    assert report.outputs["max-latency-ms"] == "20.0"
    markdown = render_markdown(report)
    assert "### Queue depth over time (load steps, first trial)" in markdown
    assert "candidate vllm:num_requests_waiting" in markdown
