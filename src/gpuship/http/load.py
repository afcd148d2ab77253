"""Open-loop HTTP load: send each request when the schedule says, whatever came before.

Latency is timed from when a request *should* have been sent (its arrival in the schedule),
not from when it was: a server that stalls makes later requests wait, and that wait is
latency a user sees. This is the correction for coordinated omission that wrk2 and vegeta
make; a closed-loop tool (wrk, ab) stops sending while the server stalls and so leaves the
stall out of its percentiles.

Each sample keeps three moments before the response: `intended` (the schedule), `dispatched`
(when the event loop woke to send it) and `sent` (when it went on the wire, after waiting for
a slot under the concurrency cap and for a connection). `dispatched - intended` is the
generator's own lag: when it grows, the generator, not the server, is the bottleneck, and
the probe says so instead of reporting it as server latency.

Timers wake to the microsecond (select(2), see _event_loop). One asyncio event loop on one
core, HTTP/1.1 keep-alive connections framed by h11 (the well-kept pure-Python HTTP/1.1
state machine: chunked bodies, keep-alive and errors handled by a library, while the timing
stays in our hands). Garbage collection is paused while the load runs so a collection never
shows up as latency.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import itertools
import selectors
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

import h11

from gpuship.errors import InputError
from gpuship.http.sse import TokenStream

# Lead time between building the run and its first arrival, so the first sends are not late.
_START_LEAD_S = 0.05
_FD_SETSIZE = 1024
# Descriptors the process holds besides the load's connections (stdio, the loop's own, NVML).
_SPARE_DESCRIPTORS = 64
_READ_SIZE = 65536
USER_AGENT = "gpuship-probe"


@dataclass(frozen=True)
class RequestSpec:
    """One request the load sends: method, path, body, and whether its answer streams tokens."""

    method: str
    path: str
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()
    streaming: bool = False


@dataclass(frozen=True)
class Arrival:
    """When (seconds from the start of the run) to send which request, in which load step."""

    at: float
    step: int
    request: int


@dataclass(frozen=True)
class Sample:
    """What happened to one request; times are seconds from the start of the run.

    `status` is 0 when no response came; `error` is "" for a success, else one of "status"
    (not an expected status), "connect", "reset", "timeout", "protocol", or for a streamed
    answer with an expected status, why the stream was not a good one (`sse.TokenStream.failure`:
    "no-tokens", "not-sse", "bad-event", "error-event"). For streamed answers
    `first_token` is the first chunk with text and `itl` the gaps between text chunks.
    `queued`: it waited for a slot under the concurrency cap (that wait is in its latency).
    """

    step: int
    intended: float
    dispatched: float
    sent: float
    first_byte: float | None
    first_token: float | None
    done: float
    status: int
    error: str
    tokens: int = 0
    itl: tuple[float, ...] = ()
    queued: bool = False

    @property
    def latency(self) -> float:
        """End-to-end latency as a user sees it: from the intended send to the last byte."""
        return self.done - self.intended

    @property
    def ttft(self) -> float | None:
        """Time to first token, from the intended send."""
        return None if self.first_token is None else self.first_token - self.intended


@dataclass(frozen=True)
class LoadResult:
    """Every sample of a run, and the monotonic clock reading its times are relative to."""

    origin: float
    duration: float
    samples: tuple[Sample, ...]


@dataclass(frozen=True)
class Target:
    """Where the load goes: host and port of a plain-HTTP server."""

    host: str
    port: int

    @classmethod
    def from_url(cls, url: str) -> Target:
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise InputError(f"{url}: the probe drives plain http://HOST:PORT servers")
        return cls(parts.hostname, parts.port or 80)

    @property
    def authority(self) -> str:
        return f"{self.host}:{self.port}"


def run_load(
    target: Target,
    arrivals: Sequence[Arrival],
    requests: Sequence[RequestSpec],
    concurrency: int,
    timeout_s: float,
    expected_status: frozenset[int] = frozenset({200}),
) -> LoadResult:
    """Send every arrival on time (open loop), at most `concurrency` in flight; wait for all."""
    driver = _Driver(target, requests, concurrency, timeout_s, expected_status)
    gc_was_enabled = gc.isenabled()
    gc.disable()
    loop = _event_loop(concurrency)
    try:
        return loop.run_until_complete(driver.run(arrivals))
    finally:
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()
        if gc_was_enabled:
            gc.enable()


def _event_loop(concurrency: int) -> asyncio.AbstractEventLoop:
    """An event loop whose timers wake to the microsecond where it can: select(2) takes a
    timeval, where epoll (asyncio's default) rounds every wait up to a whole millisecond and
    so sent requests up to 1 ms late (dispatch lag p50 1.1 ms at 100/s; 0.17 ms with select).
    select(2) watches descriptors below FD_SETSIZE (1024) only: past that many connections,
    epoll it is, a millisecond coarser."""
    if concurrency + _SPARE_DESCRIPTORS < _FD_SETSIZE:
        return asyncio.SelectorEventLoop(selectors.SelectSelector())
    return asyncio.SelectorEventLoop(selectors.EpollSelector())


@dataclass
class _Connection:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    protocol: h11.Connection = field(default_factory=lambda: h11.Connection(h11.CLIENT))

    def close(self) -> None:
        self.writer.close()


class _Failed(Exception):
    def __init__(self, kind: str, status: int = 0) -> None:
        super().__init__(kind)
        self.kind = kind
        self.status = status


@dataclass
class _Progress:
    """The moments of one request as they happen."""

    sent: float = 0.0
    first_byte: float | None = None
    first_token: float | None = None
    token_times: list[float] = field(default_factory=list)
    status: int = 0
    tokens: int = 0
    stream_failure: str | None = None  # why a finished stream was not a good answer


class _Driver:
    def __init__(
        self,
        target: Target,
        requests: Sequence[RequestSpec],
        concurrency: int,
        timeout_s: float,
        expected_status: frozenset[int],
    ) -> None:
        self.target = target
        self.requests = requests
        self.concurrency = concurrency
        self.timeout_s = timeout_s
        self.expected = expected_status
        self.idle: list[_Connection] = []
        self.samples: list[Sample] = []

    async def run(self, arrivals: Sequence[Arrival]) -> LoadResult:
        loop = asyncio.get_running_loop()
        self.loop = loop
        self.slots = asyncio.Semaphore(self.concurrency)
        start = loop.time() + _START_LEAD_S
        origin = time.monotonic() + (start - loop.time())
        tasks: set[asyncio.Task[None]] = set()
        for arrival in arrivals:
            delay = start + arrival.at - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)
            task = loop.create_task(self._one(arrival, start, loop.time() - start))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        while tasks:
            await asyncio.gather(*list(tasks))
        for connection in self.idle:
            connection.close()
        duration = loop.time() - start
        ordered = tuple(sorted(self.samples, key=lambda s: s.intended))
        return LoadResult(origin=origin, duration=duration, samples=ordered)

    async def _one(self, arrival: Arrival, start: float, dispatched: float) -> None:
        spec = self.requests[arrival.request]
        progress = _Progress()
        error = ""
        queued = self.slots.locked()
        async with self.slots:
            try:
                await asyncio.wait_for(self._exchange(spec, start, progress), self.timeout_s)
            except asyncio.TimeoutError:
                error = "timeout"
            except _Failed as failure:
                error = failure.kind
                progress.status = failure.status or progress.status
        done = self.loop.time() - start
        times = progress.token_times
        self.samples.append(
            Sample(
                step=arrival.step,
                intended=arrival.at,
                dispatched=dispatched,
                sent=progress.sent or dispatched,
                first_byte=progress.first_byte,
                first_token=progress.first_token,
                done=done,
                status=progress.status,
                error=error,
                tokens=progress.tokens,
                itl=tuple(b - a for a, b in itertools.pairwise(times)),
                queued=queued,
            )
        )

    async def _exchange(self, spec: RequestSpec, start: float, progress: _Progress) -> None:
        connection = await self._connection()
        keep = False
        try:
            progress.sent = self.loop.time() - start
            connection.writer.write(self._request_bytes(connection.protocol, spec))
            keep = await self._read_response(connection, spec, start, progress)
        except (ConnectionError, OSError) as error:
            raise _Failed("reset") from error
        except h11.ProtocolError as error:
            raise _Failed("protocol") from error
        finally:
            if keep:
                self.idle.append(connection)
            else:
                connection.close()
        if progress.status not in self.expected:
            raise _Failed("status", progress.status)
        if progress.stream_failure is not None:
            raise _Failed(progress.stream_failure)

    async def _connection(self) -> _Connection:
        if self.idle:
            return self.idle.pop()
        try:
            reader, writer = await asyncio.open_connection(self.target.host, self.target.port)
        except OSError as error:
            raise _Failed("connect") from error
        return _Connection(reader, writer)

    def _request_bytes(self, protocol: h11.Connection, spec: RequestSpec) -> bytes:
        headers = [
            ("Host", self.target.authority),
            ("User-Agent", USER_AGENT),
            ("Content-Length", str(len(spec.body))),
            *spec.headers,
        ]
        data = protocol.send(h11.Request(method=spec.method, target=spec.path, headers=headers))
        data = (data or b"") + (protocol.send(h11.Data(data=spec.body)) or b"")
        return data + (protocol.send(h11.EndOfMessage()) or b"")

    async def _read_response(
        self, connection: _Connection, spec: RequestSpec, start: float, progress: _Progress
    ) -> bool:
        """Read one response; True when the connection can carry the next request."""
        protocol = connection.protocol
        stream = TokenStream() if spec.streaming else None
        while True:
            event = protocol.next_event()
            if event is h11.NEED_DATA:
                data = await connection.reader.read(_READ_SIZE)
                protocol.receive_data(data)
                continue
            now = self.loop.time() - start
            if isinstance(event, h11.Response):
                progress.first_byte = now
                progress.status = event.status_code
            elif isinstance(event, h11.Data) and stream is not None:
                _tokens(progress, stream.feed(bytes(event.data)), now)
            elif isinstance(event, h11.EndOfMessage):
                if stream is not None:
                    _tokens(progress, stream.finish(), now)
                    progress.stream_failure = stream.failure()
                    if stream.usage_tokens is not None:
                        progress.tokens = stream.usage_tokens
                return _reusable(protocol)
            elif isinstance(event, h11.ConnectionClosed):
                raise _Failed("reset")


def _tokens(progress: _Progress, texts: int, now: float) -> None:
    """`texts` chunks with text arrived at `now`: the first of them is the first token."""
    if texts:
        if progress.first_token is None:
            progress.first_token = now
        progress.token_times.extend([now] * texts)
        progress.tokens += texts


def _reusable(protocol: h11.Connection) -> bool:
    if protocol.our_state is h11.DONE and protocol.their_state is h11.DONE:
        with contextlib.suppress(h11.LocalProtocolError):
            protocol.start_next_cycle()
            return True
    return False
