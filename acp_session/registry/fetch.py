"""HTTP GETs with a deadline over the whole transfer and a cap on what is kept.

``urllib``'s timeout bounds each socket operation, not the transfer: a server sending a byte a second (even
inside the status line or the headers) never times out. Here a watchdog shuts the connection's socket down
when the deadline passes, which ends any read blocked on it, and the body is read in chunks handed to the
caller only while the running total stays under the cap. The watchdog holds a duplicate of each socket's
descriptor, so it can end a TLS connection too (``shutdown`` acts on the connection, whatever descriptor).
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["Deadline", "TooLarge", "read_capped", "watched_urlopen"]


class TooLarge(OSError):
    """The body passed its cap (the caller names it in its own error)."""


class Deadline:
    """Shuts every socket it was given down once ``seconds`` have passed (``expired`` then says so)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.ends = time.monotonic() + seconds
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def remaining(self) -> float:
        return max(0.0, self.ends - time.monotonic())

    def watch(self, sock: socket.socket) -> None:
        """End ``sock``'s connection at the deadline (through a duplicate this object owns and closes)."""
        copy = sock.dup()
        with self._lock:
            self._sockets.append(copy)
            late = self.expired
        if late:
            _shut(copy)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shut(sock)

    def check(self) -> None:
        if self.expired or time.monotonic() >= self.ends:
            self.expired = True
            raise TimeoutError(f"not complete within {self.seconds:g} s")

    def __enter__(self) -> Deadline:
        self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._timer.cancel()
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            sock.close()


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed
        sock.shutdown(socket.SHUT_RDWR)


def _watched(base: type[http.client.HTTPConnection], deadline: Deadline) -> type[http.client.HTTPConnection]:
    class Watched(base):  # type: ignore[valid-type,misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._create_connection = self._connect_watched

        def _connect_watched(self, address: Any, timeout: Any, source_address: Any = None) -> socket.socket:
            # The connection itself is bounded by the per-read timeout, never longer than what is left.
            limit = min(timeout, deadline.remaining()) if isinstance(timeout, (int, float)) else deadline.remaining()
            sock = socket.create_connection(address, max(limit, 0.001), source_address)
            deadline.watch(sock)  # before any TLS handshake: a trickled handshake is cut off too
            return sock

    return Watched


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, deadline: Deadline) -> None:
        super().__init__()
        self._deadline = deadline

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_watched(http.client.HTTPConnection, self._deadline), req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, deadline: Deadline) -> None:
        super().__init__()
        self._deadline = deadline

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        context = getattr(self, "_context", None)  # what urllib's own handler passes (None: the default)
        return self.do_open(_watched(http.client.HTTPSConnection, self._deadline), req, context=context)


@contextmanager
def watched_urlopen(url: str, deadline: Deadline, read_timeout: float) -> Iterator[Any]:
    """``urlopen(url)`` whose sockets ``deadline`` watches (redirects and proxies as urllib does them)."""
    opener = urllib.request.build_opener(_HTTPHandler(deadline), _HTTPSHandler(deadline))
    request = urllib.request.Request(url, headers={"User-Agent": "acp-session"})
    with opener.open(request, timeout=min(read_timeout, max(deadline.remaining(), 0.001))) as response:
        yield response


def read_capped(response: Any, deadline: Deadline, cap: int, chunk: int, sink: Callable[[bytes], object]) -> int:
    """Read ``response`` into ``sink`` chunk by chunk; ``TooLarge`` before a chunk would pass ``cap`` bytes,
    ``TimeoutError`` once ``deadline`` passed. The number of bytes read."""
    received = 0
    while True:
        deadline.check()
        data: bytes = response.read1(chunk) if hasattr(response, "read1") else response.read(chunk)
        deadline.check()
        if not data:
            return received
        if received + len(data) > cap:
            raise TooLarge(f"more than {cap} bytes")
        received += len(data)
        sink(data)
