"""A watchdog that bounds the wall-clock time of HTTP requests sent with `requests`.

A socket timeout bounds each read, not a request: a server that trickles a byte a second keeps
a request alive forever. A `Watch` holds the connections used while it is active (registered
per thread by the connection class below when a request is sent on them) and shuts their
sockets down when its timer fires; the blocked read then fails at once. The adapter installs
that connection class through urllib3's `pool_classes_by_scheme`.
"""

from __future__ import annotations

import math
import socket
import threading
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
        self._lock = threading.Lock()
        self._connections: weakref.WeakSet[urllib3.connection.HTTPConnection] = weakref.WeakSet()
        self._timer: threading.Timer | None = None
        if math.isfinite(seconds):
            self._timer = threading.Timer(max(seconds, 0.0), self._fire)
            self._timer.daemon = True

    def start(self) -> None:
        if self._timer is not None:
            self._timer.start()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def attach(self, connection: urllib3.connection.HTTPConnection) -> None:
        with self._lock:
            self._connections.add(connection)
            if self.fired:
                _shutdown(connection)

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            for connection in list(self._connections):
                _shutdown(connection)


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
        with suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


class WatchedConnectionMixin:
    """Registers itself with the watches of the thread that sends on it."""

    def request(self, *args: Any, **kwargs: Any) -> None:
        for watch in getattr(_active, "watches", ()):
            watch.attach(self)
        super().request(*args, **kwargs)  # type: ignore[misc]


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
