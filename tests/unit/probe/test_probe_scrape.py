"""Reading a server's queue, on data: the gauge from Prometheus text exposition, and the
bounded series it is kept in (`gpuship.http.metrics`)."""

from __future__ import annotations

import tracemalloc

import pytest

from gpuship.http.metrics import PeakSeries, ScrapeFailed, read_gauge

KNOWN = ("vllm:num_requests_waiting", "tgi_queue_size", "nv_inference_pending_request_count")


def test_peak_series_merges_neighbours_keeping_the_larger_and_the_exact_peak() -> None:
    series = PeakSeries(4, 1.0)
    for at, value in [(0.5, 1.0), (1.5, 7.0), (2.5, 2.0), (3.5, 3.0)]:
        series.add(at, value)
    assert [v for _, v in series.points()] == [1.0, 7.0, 2.0, 3.0]
    series.add(6.0, 4.0)  # past the fourth bucket: width 2, then the pairs merge
    assert series.width == 2.0
    assert series.points() == ((0.0, 7.0), (2.0, 3.0), (4.0, None), (6.0, 4.0))
    assert series.peak == (1.5, 7.0)


def test_peak_series_memory_does_not_grow_with_the_run() -> None:
    def grow(count: int) -> int:
        tracemalloc.start()
        series = PeakSeries(600, 0.1)
        for index in range(count):
            series.add(index * 0.01, float(index % 97))
        held = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        assert len(series.points()) <= 600
        return held

    small, large = grow(10_000), grow(200_000)
    assert large < small * 1.5


VLLM_TEXT = """\
# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 8.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 3.0
vllm:num_requests_waiting{engine="1",model_name="m"} 2.0
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_bucket{le="+Inf",model_name="m"} 10.0
"""


def test_a_gauge_is_summed_over_its_series() -> None:
    gauge = read_gauge(VLLM_TEXT, KNOWN)
    assert gauge is not None
    assert (gauge.name, gauge.kind, gauge.value) == ("vllm:num_requests_waiting", "gauge", 5.0)


def test_the_first_known_gauge_is_read_and_others_lines_are_not_parsed() -> None:
    text = (
        'broken_metric{a="} garbage\n'  # another metric's line: never parsed
        "# TYPE nv_inference_pending_request_count gauge\n"
        'nv_inference_pending_request_count{model="a}b",version="1"} 4\n'
        'nv_inference_pending_request_count{model="c",version="1"} 1\n'
        "nv_inference_pending_request_count_other 99\n"
    )
    gauge = read_gauge(text, KNOWN)
    assert gauge is not None and (gauge.name, gauge.value) == (
        "nv_inference_pending_request_count",
        5.0,
    )
    assert read_gauge("tgi_queue_size 7\n", ("absent", "tgi_queue_size")) == (
        read_gauge("tgi_queue_size 7\n", ("tgi_queue_size",))
    )
    assert read_gauge(text, ("absent",)) is None


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("# TYPE q counter\nq_total 3\nq 4\n", "q is a counter, not a gauge"),
        ("# TYPE q gauge\nq NaN\n", "q is nan, not a number of requests"),
        ("q{a=b} 1\n", "not the Prometheus text format"),
    ],
)
def test_what_is_no_queue_length_is_said(text: str, says: str) -> None:
    with pytest.raises(ScrapeFailed, match=says):
        read_gauge(text, ("q",))
