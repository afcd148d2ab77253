"""A watchdog that bounds the wall-clock time of HTTP requests sent with `requests`.

A socket timeout bounds each read, not a request: a server that trickles a byte a second keeps
a request alive forever. A `Watch` holds the connections used while it is active (registered
per thread by the connection class below when a request is sent on them) and shuts their
sockets down when its time is up (one scheduler thread for all watches); the blocked read
then fails at once. The adapter installs
that connection class through urllib3's `pool_classes_by_scheme`.

The socket itself is held too, once the request is sent: an answer that will close its
connection (`Connection: close`, or a body without a length, which the close ends) takes the
socket over from the connection (http.client `getresponse` closes the connection, and its
`sock` is None from then on), and its body is read from that socket alone.
"""

from __future__ import annotations

import heapq
import itertools
import math
import os
import socket
import threading
import time
import weakref
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import requests.adapters
import urllib3.connection
import urllib3.connectionpool
import urllib3.poolmanager

_active = threading.local()


class Watch:
    """Connections used while it is active; shut down when its time is up."""

    def __init__(self, seconds: float) -> None:
        self.fired = False
        self.stopped = False
        self._seconds = seconds
        self._lock = threading.Lock()
        self._connections: weakref.WeakSet[urllib3.connection.HTTPConnection] = weakref.WeakSet()
        self._sockets: weakref.WeakSet[socket.socket] = weakref.WeakSet()

    def start(self) -> None:
        if math.isfinite(self._seconds):
            _SCHEDULER.add(time.monotonic() + max(self._seconds, 0.0), self)

    def stop(self) -> None:
        self.stopped = True

    def attach(self, connection: urllib3.connection.HTTPConnection) -> None:
        with self._lock:
            self._connections.add(connection)
            if self.fired:
                _shutdown(connection)

    def hold(self, sock: socket.socket | None) -> None:
        """Shut `sock` down with the rest, even once its connection has let go of it."""
        if sock is None:
            return
        with self._lock:
            self._sockets.add(sock)
            if self.fired:
                _shutdown_socket(sock)

    def fire(self) -> None:
        """Shut down every connection and socket attached so far, and any attached later."""
        with self._lock:
            self.fired = True
            for connection in list(self._connections):
                _shutdown(connection)
            for sock in list(self._sockets):
                _shutdown_socket(sock)


class _Scheduler:
    """One daemon thread fires every watch at its time: a timer thread per request would cost
    more than a request to a registry on a busy runner. Stopped watches are dropped when
    their time comes."""

    def __init__(self) -> None:
        self._condition = threading.Condition()
        self._queue: list[tuple[float, int, Watch]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None

    def add(self, at: float, watch: Watch) -> None:
        with self._condition:
            heapq.heappush(self._queue, (at, next(self._order), watch))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="gpuship-watchdog")
                self._thread.daemon = True
                self._thread.start()
            self._condition.notify()

    def reset(self) -> None:
        """In a forked child: the parent's thread is not there."""
        self._condition = threading.Condition()
        self._queue = []
        self._thread = None

    def _run(self) -> None:
        while True:
            watch = self._next_due()
            if not watch.stopped:
                watch.fire()

    def _next_due(self) -> Watch:
        with self._condition:
            while True:
                while self._queue and self._queue[0][2].stopped:
                    heapq.heappop(self._queue)
                if not self._queue:
                    self._condition.wait()
                    continue
                delay = self._queue[0][0] - time.monotonic()
                if delay <= 0:
                    return heapq.heappop(self._queue)[2]
                self._condition.wait(delay)


_SCHEDULER = _Scheduler()
os.register_at_fork(after_in_child=_SCHEDULER.reset)


@contextmanager
def watching(*watches: Watch) -> Iterator[None]:
    previous = getattr(_active, "watches", ())
    _active.watches = watches
    try:
        yield
    finally:
        _active.watches = previous


def _shutdown(connection: urllib3.connection.HTTPConnection) -> None:
    sock = getattr(connection, "sock", None)
    if sock is not None:
        _shutdown_socket(sock)


def _shutdown_socket(sock: socket.socket) -> None:
    with suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


class WatchedConnectionMixin:
    """Registers itself with the watches of the thread that sends on it."""

    def request(self, *args: Any, **kwargs: Any) -> None:
        watches = getattr(_active, "watches", ())
        for watch in watches:
            watch.attach(self)
        super().request(*args, **kwargs)  # type: ignore[misc]
        for watch in watches:  # sent: the answer may take the socket over (see above)
            watch.hold(getattr(self, "sock", None))


class WatchedHTTPConnection(WatchedConnectionMixin, urllib3.connection.HTTPConnection):
    pass


class WatchedHTTPSConnection(WatchedConnectionMixin, urllib3.connection.HTTPSConnection):
    pass


class WatchedHTTPPool(urllib3.connectionpool.HTTPConnectionPool):
    ConnectionCls = WatchedHTTPConnection


class WatchedHTTPSPool(urllib3.connectionpool.HTTPSConnectionPool):
    ConnectionCls = WatchedHTTPSConnection


_POOLS = {"http": WatchedHTTPPool, "https": WatchedHTTPSPool}


class WatchedAdapter(requests.adapters.HTTPAdapter):
    """requests' adapter whose connections the watchdog can shut down."""

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = _POOLS

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        # SOCKS managers bring their own pools; those keep the socket timeout only.
        if manager.pool_classes_by_scheme is urllib3.poolmanager.pool_classes_by_scheme:
            manager.pool_classes_by_scheme = _POOLS
        return manager
