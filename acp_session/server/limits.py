"""What the server holds for its clients, bounded (docs/serve.md, "Limits").

A client, or many, must not make the server hold memory without end: live connections, connections that have
not started (an ``initialize`` whose stream is never opened, a WebSocket that never sends ``initialize``) and
the bytes of client messages being read or waiting for the agent each have a cap; past it the request is refused
with ``503`` and ``Retry-After`` (a WebSocket upgrade too, before the ``101``). ``RequestBody`` lets every
refusal read the request's body first, so hypercorn keeps the HTTP/1.1 connection for the client's next request.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

import anyio

from .errors import ServerConfigError

__all__ = [
    "DEFAULT_LIMITS",
    "DRAIN_LIMIT",
    "DRAIN_SECONDS",
    "RETRY_AFTER",
    "ByteBudget",
    "RequestBody",
    "ServerLimits",
]

DRAIN_LIMIT = 64 * 1024 * 1024
"""A refused request's body is read on (and dropped) up to this many bytes before the refusal goes out."""
DRAIN_SECONDS = 10.0
"""How long a refusal waits for the rest of a body (a client that declared one and never sends it)."""
RETRY_AFTER = "5"
"""The ``Retry-After`` of a ``503`` for a cap (seconds)."""


@dataclass(frozen=True)
class ServerLimits:
    """The caps of one server, all server-wide (``ServerOptions.limits``; on the command lines, the options
    ``--max-connections``, ``--max-pending``, ``--pending-timeout`` and ``--max-buffered-bytes``)."""

    max_connections: int = 256
    """Live connections (HTTP and WebSocket); one more ``initialize`` or upgrade gets ``503``."""
    max_pending: int = 32
    """Connections not started yet: an HTTP ``initialize`` answered whose connection stream is not open, a
    WebSocket upgraded that has not sent ``initialize``; one more gets ``503``."""
    pending_timeout: float = 30.0
    """Seconds a connection may stay not started; then it ends (a WebSocket is closed with ``1008``)."""
    max_buffered_bytes: int = 32 * 1024 * 1024
    """Bytes of client messages held at once: request bodies being read and messages the agents have not taken
    yet. A body that does not fit gets ``503`` (one alone may be as large as the body limit); a WebSocket
    message waits for room, and meanwhile that socket is not read."""

    def __post_init__(self) -> None:
        if min(self.max_connections, self.max_pending, self.max_buffered_bytes) < 1 or self.pending_timeout <= 0:
            raise ServerConfigError("the server's limits must be positive")


DEFAULT_LIMITS = ServerLimits()


class ByteBudget:
    """Bytes held for clients, server-wide: taken as a message is read, given back once the agent took it."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.peak = 0
        self._freed = anyio.Event()

    def take(self, size: int) -> bool:
        """Hold ``size`` more bytes if they fit (anything fits while nothing is held); False otherwise."""
        if self.used and self.used + size > self.limit:
            return False
        self.used += size
        self.peak = max(self.peak, self.used)
        return True

    async def take_when_free(self, size: int) -> None:
        """Hold ``size`` more bytes, waiting until they fit."""
        while not self.take(size):
            await self._freed.wait()

    def give_back(self, size: int) -> None:
        self.used = max(0, self.used - size)
        self._freed.set()
        self._freed = anyio.Event()


Message = MutableMapping[str, Any]


class RequestBody:
    """An HTTP request's ``receive``, noting whether the body was read to its end.

    hypercorn reuses an HTTP/1.1 connection only when the request was read whole before the response ended;
    otherwise it closes it, maybe under a client that is already sending its next request there (which then
    sees "disconnected without a response"). So a refusal reads the body on first (``drain``), and says
    ``Connection: close`` when it could not."""

    def __init__(self, receive: Callable[[], Awaitable[Message]], content_length: str | None = None) -> None:
        self._receive = receive
        self.declared = int(content_length) if content_length and content_length.isdigit() else None
        """The ``Content-Length`` (None when absent or not a number)."""
        self.read = 0
        self.complete = False
        self.disconnected = False

    async def __call__(self) -> Message:
        message = await self._receive()
        if message["type"] == "http.disconnect":
            self.complete = self.disconnected = True
        elif message["type"] == "http.request":
            self.read += len(message.get("body", b""))
            self.complete = not message.get("more_body", False)
        return message

    async def drain(self, limit: int = DRAIN_LIMIT) -> bool:
        """Read the rest of the body and drop it; False when it is (or would go) past ``limit`` bytes in all or
        does not come within ``DRAIN_SECONDS``."""
        if self.complete:
            return True
        if self.declared is not None and self.declared > limit:
            return False
        with anyio.move_on_after(DRAIN_SECONDS):
            while not self.complete and self.read <= limit:
                await self()
        return self.complete
