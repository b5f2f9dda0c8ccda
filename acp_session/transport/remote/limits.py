"""How much a remote transport holds and how long it waits, against a slow or hostile server."""

from __future__ import annotations

from dataclasses import dataclass

from ..framing import DEFAULT_MAX_FRAME_SIZE

__all__ = ["DEFAULT_REMOTE_LIMITS", "MAX_ERROR_BODY", "SMALL_READ", "RemoteLimits", "notifications_trickle"]

MAX_ERROR_BODY = 8 * 1024
"""The most of an error response's body kept (diagnostic text, like the official SDKs' 8 KiB)."""

SMALL_READ = 16 * 1024
"""A stream read under this many bytes is a small one (``RemoteLimits.stream_pause``)."""


def notifications_trickle(data: bytes) -> bool:
    """Whether a stream read ``data`` (messages only) looks like a server writing notifications one at a time:
    small, and no ``"id"`` in it (no request, no answer: nothing that somebody waits for). A heuristic for
    ``stream_pause``, never for routing: a miss costs a wake-up, a false hit at most the pause."""
    return len(data) < SMALL_READ and b'"id"' not in data


@dataclass(frozen=True, slots=True)
class RemoteLimits:
    """Bounds of one remote connection. Memory: at most ``inbox_frames`` whole messages wait for the reader,
    plus one message being read per open stream (``max_message`` each, as on stdio)."""

    max_message: int = DEFAULT_MAX_FRAME_SIZE
    """One JSON-RPC message: an SSE event's data, a WebSocket text message, a POST body (ours or the answer)."""
    inbox_frames: int = 256
    """Messages received and not yet taken by the rpc layer; past it the streams stop reading (backpressure)."""
    max_session_streams: int = 1024
    """Session-scoped event streams open at once on one HTTP connection (past it a session is detached)."""
    max_subagent_streams: int = 64
    """Subagent (child) sessions' event streams open at once on one HTTP connection, far below the common limit
    of 1 024 descriptors a process: the client opens one only for a child it tracks (``Limits.subagents``), and
    past this many the others wait, in order, until one closes (the server ends it, or the client stops tracking
    that child). Their updates wait on the server meanwhile."""
    connect_timeout: float = 30.0
    """Seconds to connect (TCP, TLS, WebSocket upgrade)."""
    response_timeout: float = 60.0
    """Seconds between two reads of an ordinary response (POST, DELETE, the status line of a GET): a server that
    stops sending mid-response (slowloris) fails the request or the transport after it."""
    stream_idle_timeout: float | None = None
    """Seconds an event stream may stay silent (None: forever; an idle agent sends nothing)."""
    close_timeout: float = 5.0
    """Seconds the ``DELETE`` (or the WebSocket close) on closing may take."""
    stream_pause: float = 0.001
    """Seconds a stream's reader waits before reading again after a small read of notifications only (under
    16 KiB, no request or answer in it): a server that writes a notification at a time (a socket write per
    WebSocket frame or SSE event) is then read many messages a wake-up instead of one or two, each wake-up
    costing the client tens of microseconds of CPU on a busy machine. A message arriving meanwhile waits at most
    this long; after a read with a request or an answer in it, or of 16 KiB or more, the reader reads again at
    once. 0: never pause."""

    def __post_init__(self) -> None:
        if min(self.max_message, self.inbox_frames, self.max_session_streams, self.max_subagent_streams) < 1:
            raise ValueError("remote limits must be positive")
        if not 0 <= self.stream_pause <= 1:
            raise ValueError("stream_pause must be between 0 and 1 second")


DEFAULT_REMOTE_LIMITS = RemoteLimits()
