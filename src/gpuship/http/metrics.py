"""Read a server's own queue from its Prometheus endpoint while the probe runs.

A background thread GETs the endpoint every `interval` seconds and keeps, for the first of
`names` that the endpoint exposes, the sum of its samples: vLLM's gauge has one series per
engine, Triton's one per model, so the server's queue is their sum.

The text exposition format is parsed by the Prometheus project's own parser
(`prometheus_client.parser`), not by hand: escaped label values, comments, `# TYPE` lines and
special values (NaN, +Inf) are its business. Lines of other metrics are dropped before it sees
them. The format is line-oriented (a sample line starts with its metric name, a `# HELP` or
`# TYPE` line names its metric, and a newline inside a label value or a help text is escaped),
so this drops nothing the parser would have read for `names`, and a vLLM-sized answer costs
0.19 ms instead of 88 ms (bench/probe/scrape.py): the scraper runs in the probe's process,
and every millisecond it holds the GIL is a millisecond the load generator may send late.

What is kept is bounded whatever the run's length: a `PeakSeries` of at most `capacity`
points, and the exact peak of each phase the caller marks.
"""

from __future__ import annotations

import contextlib
import math
import re
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

# Prometheus metric types that hold a level (`unknown` is an untyped line), not a count.
_LEVEL_TYPES = frozenset({"gauge", "unknown"})
_USER_AGENT = "gpuship-probe"


class ScrapeFailed(Exception):
    """The endpoint could not be read, or what it answered holds no usable value."""


class PeakSeries:
    """The largest value in each time bucket, in at most `capacity` buckets.

    Bucket i covers [i * width, (i + 1) * width) seconds from the series' origin. When a value
    falls past the last bucket, neighbouring buckets merge pairwise (keeping the larger value)
    and the width doubles, as often as needed: memory stays at `capacity` values however long
    the run. The peak and when it happened are kept exactly.
    """

    def __init__(self, capacity: int, width: float) -> None:
        if capacity < 1 or width <= 0:
            raise ValueError("a series needs a bucket and a positive width")
        self.capacity = capacity
        self.width = width
        self._values: list[float | None] = []
        self._last = -1  # the latest bucket given a value
        self.peak: tuple[float, float] | None = None  # (at, value)

    def add(self, at: float, value: float) -> None:
        """`value` observed `at` seconds after the origin (at >= 0)."""
        index = self._slot(at)
        held = self._values[index]
        self._values[index] = value if held is None else max(held, value)
        self._last = max(self._last, index)
        if self.peak is None or value > self.peak[1]:
            self.peak = (at, value)

    def carry(self, at: float, level: float) -> None:
        """A level held since the last value added, until `at`: every bucket between gets it
        (the bucket `at` opens, if it opens one, does not: the level ended as it began)."""
        index = self._slot(at)
        if at <= index * self.width:
            index -= 1
        for slot in range(self._last + 1, index + 1):
            held = self._values[slot]
            self._values[slot] = level if held is None else max(held, level)
        self._last = max(self._last, index)
        if self.peak is None:
            self.peak = (at, level)

    def reach(self, at: float) -> None:
        """Cover the time up to `at` (buckets with nothing in them are None)."""
        self._slot(at)

    def points(self) -> tuple[tuple[float, float | None], ...]:
        """(bucket start, largest value in it or None), oldest first."""
        return tuple((index * self.width, value) for index, value in enumerate(self._values))

    def _slot(self, at: float) -> int:
        index = int(max(at, 0.0) / self.width)
        while index >= self.capacity:
            merged = [
                _larger(self._values[i], self._values[i + 1] if i + 1 < len(self._values) else None)
                for i in range(0, len(self._values), 2)
            ]
            self._values = merged
            self._last //= 2
            self.width *= 2
            index = int(max(at, 0.0) / self.width)
        if index >= len(self._values):
            self._values.extend([None] * (index + 1 - len(self._values)))
        return index


def _larger(a: float | None, b: float | None) -> float | None:
    if a is None:
        return b
    return a if b is None else max(a, b)


@dataclass(frozen=True)
class Gauge:
    """One metric read from an exposition: its name, Prometheus type and summed value."""

    name: str
    kind: str
    value: float


def read_gauge(text: str, names: Sequence[str]) -> Gauge | None:
    """The first of `names` the exposition holds, summed over its series; None when none is.

    ScrapeFailed when the lines of `names` do not parse, the metric is not a level (a counter,
    a histogram), or a value is not a finite number.
    """
    kept = _metric_lines(text, names)
    try:
        families = list(text_string_to_metric_families("\n".join(kept) + "\n"))
    except ValueError as error:
        raise ScrapeFailed(f"not the Prometheus text format: {error}") from None
    for name in names:
        # A counter `q` is written `q_total`: its family still has the name `q`.
        kinds = {f.type for f in families if f.name == name and f.type not in _LEVEL_TYPES}
        if kinds:
            raise ScrapeFailed(f"{name} is a {kinds.pop()}, not a gauge: it holds no queue length")
        samples = [(f.type, s.value) for f in families for s in f.samples if s.name == name]
        if not samples:
            continue
        kind = samples[0][0]
        total = sum(float(value) for _, value in samples)
        if not math.isfinite(total):
            raise ScrapeFailed(f"{name} is {total}, not a number of requests")
        return Gauge(name, kind, total)
    return None


def _metric_lines(text: str, names: Sequence[str]) -> list[str]:
    """The sample, `# HELP` and `# TYPE` lines of `names` (leading blanks allowed), found by
    substring search at C speed: a Python loop, or a regex tried at every position, over a
    vLLM answer's thousands of lines took milliseconds."""
    found: dict[int, str] = {}
    for name in names:
        line = re.compile(
            rf"[ \t]*(?:#[ \t]+(?:HELP|TYPE)[ \t]+)?{re.escape(name)}(?:[{{ \t].*)?", re.DOTALL
        )
        at = text.find(name)
        while at != -1:
            start = text.rfind("\n", 0, at) + 1
            end = text.find("\n", at)
            end = len(text) if end == -1 else end
            if start not in found and line.fullmatch(text, start, end):
                found[start] = text[start:end]
            at = text.find(name, end)
    return [found[start] for start in sorted(found)]


@dataclass(frozen=True)
class ServerTrace:
    """What was read from the endpoint over a run; times are seconds from `origin`.

    `metric`/`kind` name what was found (None: none of the names, ever); `peaks` maps each
    phase the caller marked to its peak (at, value); `points` are (bucket start, largest
    value) with `width` seconds per bucket.
    """

    url: str
    names: tuple[str, ...]
    origin: float
    metric: str | None
    kind: str | None
    scrapes: int
    failures: int
    error: str | None
    peaks: Mapping[str, tuple[float, float]]
    width: float
    points: tuple[tuple[float, float | None], ...]


class Scraper:
    """Reads the endpoint every `interval` seconds until stopped."""

    def __init__(
        self, url: str, names: Sequence[str], interval: float, max_bytes: int, capacity: int
    ) -> None:
        self.url = url
        self.names = tuple(names)
        self.interval = interval
        self.max_bytes = max_bytes
        self.origin = time.monotonic()
        self.series = PeakSeries(capacity, interval)
        self.metric: str | None = None
        self.kind: str | None = None
        self.scrapes = 0
        self.failures = 0
        self.error: str | None = None
        self.phase = ""
        self.peaks: dict[str, tuple[float, float]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gpuship-metrics", daemon=True)

    def _run(self) -> None:
        next_at = time.monotonic()
        while not self._stop.is_set():
            self.scrape_once()
            next_at += self.interval
            self._stop.wait(max(0.0, next_at - time.monotonic()))

    def scrape_once(self) -> None:
        """One read; a failure is counted and the first one's reason kept."""
        at = time.monotonic() - self.origin
        self.scrapes += 1
        try:
            gauge = read_gauge(self._get(), (self.metric,) if self.metric else self.names)
        except ScrapeFailed as failure:
            self.failures += 1
            self.error = self.error or str(failure)
            return
        if gauge is not None:
            self.metric, self.kind = gauge.name, gauge.kind
            self.series.add(at, gauge.value)
            peak = self.peaks.get(self.phase)
            if peak is None or gauge.value > peak[1]:
                self.peaks[self.phase] = (at, gauge.value)

    def mark(self, phase: str) -> None:
        """Readings from now on belong to `phase` (its own peak)."""
        self.phase = phase

    def _get(self) -> str:
        # http:// only: probe.metrics-url is checked when the config is read.
        request = urllib.request.Request(self.url, headers={"User-Agent": _USER_AGENT})  # noqa: S310
        timeout = max(min(self.interval, 2.0), 0.1)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:  # noqa: S310
                body = response.read(self.max_bytes + 1)
        except urllib.error.HTTPError as error:
            raise ScrapeFailed(f"{self.url} answered {error.code}") from None
        except (urllib.error.URLError, OSError, ValueError) as error:
            reason = getattr(error, "reason", error)
            raise ScrapeFailed(f"{self.url}: {reason}") from None
        if len(body) > self.max_bytes:
            raise ScrapeFailed(
                f"{self.url}: larger than {self.max_bytes} bytes (limits.metrics-max-bytes)"
            )
        try:
            return bytes(body).decode("utf-8")
        except UnicodeDecodeError:
            raise ScrapeFailed(f"{self.url}: not UTF-8") from None

    def trace(self) -> ServerTrace:
        return ServerTrace(
            url=self.url,
            names=self.names,
            origin=self.origin,
            metric=self.metric,
            kind=self.kind,
            scrapes=self.scrapes,
            failures=self.failures,
            error=self.error,
            peaks=dict(self.peaks),
            width=self.series.width,
            points=self.series.points(),
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)


@contextlib.contextmanager
def scraping(
    url: str, names: Sequence[str], interval: float, max_bytes: int, capacity: int
) -> Iterator[Scraper]:
    """Scrape while the context is open."""
    scraper = Scraper(url, names, interval, max_bytes, capacity)
    scraper.start()
    try:
        yield scraper
    finally:
        scraper.stop()
