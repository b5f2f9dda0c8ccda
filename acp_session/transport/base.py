"""What the rpc layer reads and writes: byte streams (``Transport``) and message-framed transports
(``FrameTransport``, optionally with the hot path's extras, ``FastPathTransport``), plus a wrapper for anyio
byte streams.

A ``Connection`` works on frames: whole messages in, whole messages out. A byte stream gets newline framing
from ``transport.lines`` (``frame_transport``), so nothing above the transport layer knows about newlines, and
a message-framed transport (in memory, a WebSocket) plugs in as it is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

from .framing import Frame

__all__ = [
    "DEFAULT_RECEIVE_SIZE",
    "FastPathTransport",
    "FrameTransport",
    "FramedStream",
    "PeerExit",
    "SessionStreams",
    "StreamTransport",
    "Transport",
]

DEFAULT_RECEIVE_SIZE = 65536


@dataclass(frozen=True, slots=True)
class PeerExit:
    """Why the peer went away, as far as the transport knows (subprocesses know the most)."""

    exit_code: int | None = None
    stderr_tail: tuple[str, ...] = ()
    reason: str | None = None
    """What ended it, in words, when the transport knows better than "the peer closed the connection" (a remote
    transport: an HTTP status, a lost event stream); credentials are never in it."""


@runtime_checkable
class Transport(Protocol):
    """A bidirectional byte stream (the subset of ``anyio.abc.ByteStream`` the rpc layer needs).

    ``receive`` raises ``anyio.EndOfStream`` (or ``ClosedResourceError``/``BrokenResourceError``) when the
    peer's side ends; ``send`` raises ``BrokenResourceError``/``ClosedResourceError`` when it cannot write.
    """

    async def receive(self, max_bytes: int = DEFAULT_RECEIVE_SIZE) -> bytes: ...

    async def send(self, item: bytes) -> None: ...

    async def aclose(self) -> None: ...

    async def peer_exit(self) -> PeerExit:
        """Called once the stream ended: wait briefly (well under 100 ms) for exit details."""
        ...


@runtime_checkable
class FrameTransport(Protocol):
    """A transport that carries whole messages: each frame is the bytes of one JSON-RPC message.

    ``receive_frames`` returns the next frames, at least one, in order (a stream transport returns what one
    read completed); it raises ``anyio.EndOfStream`` (or ``ClosedResourceError``/``BrokenResourceError``) once
    the peer's side has ended and every frame was returned. Each ``bytes`` frame must be UTF-8 text (a
    WebSocket text message is; a stream transport checks with ``framing.check_utf8``); a frame that is not,
    or that was too large to keep, is passed as an ``InvalidUtf8Frame`` or ``OversizedFrame`` marker, which
    the rpc layer reports and answers as the rules say. A frame may carry JSON whitespace around the message.

    ``send_frames`` sends messages in order, each exactly once and whole; how they are delimited on the wire
    is the transport's business. It raises ``BrokenResourceError``/``ClosedResourceError`` when it cannot.
    """

    async def receive_frames(self) -> list[Frame]: ...

    async def send_frames(self, frames: list[bytes]) -> None: ...

    async def aclose(self) -> None: ...

    async def peer_exit(self) -> PeerExit:
        """As ``Transport.peer_exit``."""
        ...


@runtime_checkable
class SessionStreams(Protocol):
    """A transport that reads each session's messages on a stream of its own (the HTTP profile), told by the
    client which subagent (child) sessions to read: only those the client tracks, so an agent announcing children
    without end cannot make it open a stream for each. Both calls return at once; the transport bounds how many
    such streams are open (the rest wait) and ignores a session it already reads."""

    def follow_session(self, session_id: str) -> None: ...

    def unfollow_session(self, session_id: str) -> None: ...


@runtime_checkable
class FastPathTransport(FrameTransport, Protocol):
    """A ``FrameTransport`` that can also write without waiting and hand over an answer early.

    A ``Connection`` checks for this once, when it starts (``isinstance``), and binds the three methods:

    * ``send_nowait(frame)`` sends one message if that needs no waiting and returns True; otherwise it sends
      nothing at all and returns False (the caller queues the frame for ``send_frames``). Never part of one.
    * ``set_ready_consumer(consumer)``: while a ``receive_frames`` waits, data that arrives and is exactly one
      whole frame may first be offered to ``consumer(frame)``, where the transport can (asyncio: inside the
      loop's readiness callback). True means the consumer took it; False that it changed nothing, and the
      frame is returned by ``receive_frames`` as usual. None removes the consumer.
    * ``poll_ready()`` does that on demand: True if data came (taken, or handed to the waiting receive),
      False if nothing came yet, None if it cannot poll now (no receive waiting, no consumer, another
      backend), so the caller stops polling and waits normally.
    """

    def send_nowait(self, frame: bytes) -> bool: ...

    def set_ready_consumer(self, consumer: Callable[[bytes], bool] | None) -> None: ...

    def poll_ready(self) -> bool | None: ...


@runtime_checkable
class FramedStream(Protocol):
    """A byte ``Transport`` that knows a better way to be framed than reading it through ``receive``
    (``AgentProcess``: straight over its pipes, with the fast paths)."""

    def frames(self, max_frame_size: int) -> FrameTransport:
        """A frame transport over this stream (use either it or the byte interface, never both)."""
        ...


class StreamTransport:
    """A ``Transport`` over an anyio receive stream and send stream (sockets, pipes, ...)."""

    def __init__(self, receive_stream: ByteReceiveStream, send_stream: ByteSendStream) -> None:
        self._receive_stream = receive_stream
        self._send_stream = send_stream

    async def receive(self, max_bytes: int = DEFAULT_RECEIVE_SIZE) -> bytes:
        return await self._receive_stream.receive(max_bytes)

    async def send(self, item: bytes) -> None:
        await self._send_stream.send(item)

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True):
            await self._send_stream.aclose()
            await self._receive_stream.aclose()  # idempotent when both are the same stream

    async def peer_exit(self) -> PeerExit:
        return PeerExit()
