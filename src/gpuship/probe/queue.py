"""The client side's queue over a run, and the slowest request over time, from the samples.

Each request's moments (`http.load.Sample`) say where it was at every instant:

- waiting for a slot under the concurrency cap: from `dispatched` to `sent`, when `queued`.
  That wait ends when a request ahead of it ends and frees its slot and its keep-alive
  connection, so it is the slot's wait, not a connection's;
- in flight, holding a slot: from `dispatched` (or `sent`, when it waited) to `done`.

A sweep over those moments in time order (an ending before a start at the same instant: the
slot is handed over) gives both depths at every instant. What is kept is bounded whatever the
number of requests: `PeakSeries` holds the largest depth in each time bucket, at most
`points` buckets (neighbours merge as the run grows), and the peaks exactly. The slowest
request sent in each bucket is kept the same way, on the same buckets.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from gpuship.http.load import LoadResult, Sample
from gpuship.http.metrics import PeakSeries

# The first bucket width; widths double as a run outgrows `points` buckets.
_WIDTH_S = 0.1
_IN_FLIGHT, _WAITING = 0, 1


@dataclass(frozen=True)
class ClientQueue:
    """Depths on the client side, per bucket of `width` seconds from the phase's start."""

    width: float
    in_flight: tuple[int, ...]  # the most requests holding a slot in each bucket
    waiting: tuple[int, ...]  # the most requests waiting for a slot in each bucket
    slowest: tuple[float | None, ...]  # the longest latency of a request sent in each bucket
    peak_in_flight: int
    peak_waiting: int


def client_queue(result: LoadResult, points: int) -> ClientQueue:
    """Both depths over the run and its slowest request per bucket, in `points` buckets."""
    depths = (PeakSeries(points, _WIDTH_S), PeakSeries(points, _WIDTH_S))
    levels = [0, 0]
    for at, change, which in sorted(_moves(result.samples)):
        series = depths[which]
        series.carry(at, levels[which])
        levels[which] += change
        series.add(at, levels[which])
    slowest = PeakSeries(points, _WIDTH_S)
    for sample in result.samples:
        slowest.add(sample.intended, sample.latency)
    # Every series reaches the same end, so all have the same buckets.
    end = max([result.duration, *(s.done for s in result.samples)])
    for series in depths:
        series.carry(end, 0)
    slowest.reach(end)
    return ClientQueue(
        width=depths[0].width,
        in_flight=_counts(depths[_IN_FLIGHT]),
        waiting=_counts(depths[_WAITING]),
        slowest=tuple(value for _, value in slowest.points()),
        peak_in_flight=_peak(depths[_IN_FLIGHT]),
        peak_waiting=_peak(depths[_WAITING]),
    )


def _moves(samples: Sequence[Sample]) -> Iterator[tuple[float, int, int]]:
    """(when, +1 or -1, which depth) for every request."""
    for sample in samples:
        held_from = sample.dispatched
        if sample.queued:
            yield sample.dispatched, 1, _WAITING
            yield sample.sent, -1, _WAITING
            held_from = sample.sent
        yield held_from, 1, _IN_FLIGHT
        yield sample.done, -1, _IN_FLIGHT


def _counts(series: PeakSeries) -> tuple[int, ...]:
    return tuple(int(value or 0) for _, value in series.points())


def _peak(series: PeakSeries) -> int:
    return int(series.peak[1]) if series.peak else 0
