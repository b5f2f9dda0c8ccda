"""One client connection (an ``Acp-Connection-Id``): the application's handler on a frame transport that takes
the client's messages from POSTs (or a WebSocket) and routes the application's messages to the initialize POST's
body, the connection's SSE stream or a session's SSE stream (``rules.OutboundRoutes``, by each message's
``sessionId``; every connection routes its own, so one session may be served on several connections).

A stream holds what its reader has not taken yet, so an answer written before the client opened the stream is
not lost; the bytes a connection holds are bounded, and a client that lets them pile up past the bound loses the
connection. The client's messages waiting for the application count in the server's ``ByteBudget`` until the
application takes them (``limits``).
"""

from __future__ import annotations

import collections
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping
from types import MappingProxyType
from typing import Literal, NoReturn

import anyio
import msgspec
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .._counted_log import CountedLog
from ..transport.base import FrameTransport, PeerExit
from ..transport.framing import Frame
from .hooks import ServerHooks
from .limits import DEFAULT_LIMITS, ByteBudget, ServerLimits
from .rules import CONNECTION, INITIAL, Inbound, OutboundRoutes, Route

__all__ = [
    "MAX_BUFFERED_BYTES",
    "MAX_SESSION_STREAMS",
    "ConnectionHandler",
    "ConnectionOverflow",
    "IncomingConnection",
    "OutboundStream",
    "Profile",
    "RemoteConnection",
    "SseEvents",
    "StreamBusy",
    "render_events",
    "sse_event",
]

_log = logging.getLogger("acp_session.server")

Profile = Literal["http", "websocket"]
"""How a client is connected: Streamable HTTP (POSTs and SSE streams) or one WebSocket."""

MAX_BUFFERED_BYTES = 32 * 1024 * 1024
"""Bytes one connection may hold for readers that have not taken them; past it the connection ends."""
MAX_SESSION_STREAMS = 1024
"""Session streams one connection may have; a client that needs more loses the connection."""
TAKE_BYTES = 64 * 1024
"""Bytes of queued messages an SSE stream writes at once (one message larger than it goes alone)."""


def sse_event(frame: bytes) -> bytes:
    """One message as one SSE event: a single ``data:`` line, so its JSON text must have no line break."""
    frame = frame.strip()
    if b"\n" in frame or b"\r" in frame:
        frame = msgspec.json.encode(msgspec.json.decode(frame))  # whitespace between tokens only
    return b"data: " + frame + b"\n\n"


class SseEvents(bytes):
    """Messages an SSE stream holds rendered already (``RemoteConnection.send_notifications``): written as they
    are, where a plain message is rendered by ``sse_event`` when its stream's reader takes it."""

    __slots__ = ()


def render_events(frames: list[bytes]) -> bytes:
    """What an SSE stream writes for the messages it took (``OutboundStream.take``)."""
    return b"".join([frame if type(frame) is SseEvents else sse_event(frame) for frame in frames])


class StreamBusy(Exception):
    """The stream already has a reader (HTTP 409)."""


class ConnectionOverflow(Exception):
    """The connection held more than it may (bytes nobody read, or session streams); it has ended."""


class OutboundStream:
    """The messages of one SSE stream, held until its (single) reader takes them."""

    def __init__(self, owner: RemoteConnection) -> None:
        self._owner = owner
        self._queue: collections.deque[bytes] = collections.deque()
        self._wake = anyio.Event()
        self.has_reader = False
        self.closed = False

    def push(self, frame: bytes) -> None:
        if self.closed:
            return
        self._owner.buffered += len(frame)
        if self._owner.buffered > MAX_BUFFERED_BYTES:
            raise ConnectionOverflow
        self._queue.append(frame)
        self._wake.set()

    def acquire(self) -> None:
        if self.has_reader:
            raise StreamBusy
        self.has_reader = True

    def release(self) -> None:
        self.has_reader = False

    def close(self) -> None:
        self.closed = True
        self._wake.set()

    async def take(self, keep_alive: float, max_bytes: int = TAKE_BYTES) -> list[bytes] | None:
        """The messages queued now, oldest first (at least one; more while they add up to ``max_bytes``), so a
        burst goes out in one write instead of one per message; None when ``keep_alive`` seconds passed without
        one; EndOfStream once closed."""
        with anyio.move_on_after(keep_alive):
            while not self._queue:
                if self.closed:
                    raise anyio.EndOfStream
                self._wake = anyio.Event()
                await self._wake.wait()
            queue = self._queue
            frame = queue.popleft()
            frames, size = [frame], len(frame)
            while queue and size + len(queue[0]) <= max_bytes:
                frame = queue.popleft()
                frames.append(frame)
                size += len(frame)
            self._owner.buffered -= size
            return frames
        return None


class _Transport:
    """The ``FrameTransport`` the application reads and writes: frames in from the client, routed frames out."""

    def __init__(
        self,
        owner: RemoteConnection,
        inbound: MemoryObjectReceiveStream[bytes],
        sink: Callable[[list[bytes]], Awaitable[None]],
        budget: ByteBudget,
    ) -> None:
        self._owner = owner
        self._inbound = inbound
        self._sink = sink
        self._budget = budget

    async def receive_frames(self) -> list[Frame]:
        taken = [await self._inbound.receive()]
        while True:
            try:
                taken.append(self._inbound.receive_nowait())
            except (anyio.WouldBlock, anyio.EndOfStream):
                self._budget.give_back(sum(map(len, taken)))  # the application has them now
                frames: list[Frame] = list(taken)
                return frames

    def give_back_queued(self) -> None:
        """The messages the application will never take (the connection ended) leave the budget."""
        while True:
            try:
                self._budget.give_back(len(self._inbound.receive_nowait()))
            except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                return

    async def send_frames(self, frames: list[bytes]) -> None:
        if self._owner.ended.is_set():
            raise anyio.BrokenResourceError  # nobody reads them any more
        await self._sink(frames)

    async def aclose(self) -> None:
        self._inbound.close()

    async def peer_exit(self) -> PeerExit:
        return PeerExit()


ConnectionHandler = Callable[["IncomingConnection"], Awaitable[None]]
"""What serves one client connection: called once per connection, in the server's task group, with the
connection; the connection ends when it returns (and it is cancelled when the connection ends first)."""


class IncomingConnection:
    """One client's connection, as the application's ``ConnectionHandler`` sees it: the messages (``transport``,
    on which an ``acp_session.rpc.Connection`` runs), who the client is, and its end."""

    def __init__(
        self,
        owner: RemoteConnection,
        transport: FrameTransport,
        peer: tuple[str, int] | None,
        headers: Mapping[str, str],
    ) -> None:
        self._owner = owner
        self.transport = transport
        """The client's messages in, the application's out (a ``FrameTransport``; one JSON-RPC message per
        frame). The server routes each outgoing message to the stream its ``sessionId`` names."""
        self.connection_id = owner.connection_id
        """The ``Acp-Connection-Id`` (random, unique per server run)."""
        self.profile: Profile = "http" if owner.websocket_sink is None else "websocket"
        self.peer = peer
        """The client's address and port as the server saw them (None when the ASGI server did not say)."""
        self.headers: Mapping[str, str] = MappingProxyType(
            {name: value for name, value in headers.items() if name != "authorization"}
        )
        """The headers of the request that opened the connection (the ``initialize`` POST, or the WebSocket
        upgrade), names lower-cased, a repeated header by its last value; ``Authorization`` left out (the token
        is the server's)."""

    def __repr__(self) -> str:
        return f"IncomingConnection({self.connection_id!r}, profile={self.profile!r}, peer={self.peer!r})"

    async def send_notifications(self, session_id: str, method: str, params: list[bytes]) -> None:
        """Notifications of ``method`` about ``session_id`` whose params are encoded JSON already (a relay's logged
        updates), sent at once: the frames ``rpc.Connection.notify_encoded`` would write to ``transport``, byte for
        byte, without the rpc layer's write queue; over HTTP put on the session's SSE stream as one piece of
        events, without reading each frame back to find its stream. The caller keeps the order: what it handed
        to ``transport`` before must have been sent (``rpc.Connection.queued_written``, with no ``await``
        between); they are in their stream's queue before the first ``await`` here (over WebSocket it then waits
        for room, as ``transport`` does). ``anyio.BrokenResourceError`` once the connection ended."""
        await self._owner.send_notifications(session_id, method, params)

    @property
    def closed(self) -> bool:
        """Whether the connection ended."""
        return self._owner.ended.is_set()

    def close(self, reason: str | None = None) -> None:
        """End the connection now: its streams end (a WebSocket is closed, with ``reason`` and code 1013, "try
        again later", when one is given) and the handler is cancelled."""
        if reason is not None and self._owner.end_reason is None:
            self._owner.end_reason = reason
        self._owner.end()

    def on_close(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` once the connection has ended (at once if it has): after the handler finished or was
        cancelled. An exception it raises is logged, not raised."""
        if self.closed:
            _call(callback)
        else:
            self._owner.close_callbacks.append(callback)

    async def wait_closed(self) -> None:
        """Return once the connection has ended."""
        await self._owner.ended.wait()


def _call(callback: Callable[[], None]) -> None:
    try:
        callback()
    except Exception:
        _log.exception("a close callback of a connection failed")


class RemoteConnection:
    """An ``Acp-Connection-Id``: its handler, its streams, and how it ends."""

    def __init__(
        self,
        websocket_sink: Callable[[list[bytes]], Awaitable[None]] | None = None,
        hooks: ServerHooks | None = None,
        limits: ServerLimits = DEFAULT_LIMITS,
        budget: ByteBudget | None = None,
        *,
        peer: tuple[str, int] | None = None,
        headers: Mapping[str, str] | None = None,
        log: CountedLog | None = None,
    ) -> None:
        self.connection_id = secrets.token_urlsafe(18)
        self.log = log or CountedLog(_log, "the clients")
        """Where what a client can cause once per connection is logged, counted per kind (the server's)."""
        self.cookie = secrets.token_urlsafe(12)
        """The affinity cookie's value for this connection (a load balancer would route on it)."""
        hooks = hooks or ServerHooks()
        self.routes = OutboundRoutes(answers_on_connection=hooks.answers_on_connection_stream)
        self.connection_stream = OutboundStream(self)
        self.session_streams: dict[str, OutboundStream] = {}
        self.buffered = 0
        self.stream_opened = anyio.Event()
        self.ended = anyio.Event()
        self.end_reason: str | None = None
        """Why the application ended the connection (``IncomingConnection.close``), said in the WebSocket's close."""
        self.close_callbacks: list[Callable[[], None]] = []
        self._initial: bytes | None = None
        self._initial_ready = anyio.Event()
        self.websocket_sink = websocket_sink
        self.websocket = websocket_sink is not None
        send, receive = anyio.create_memory_object_stream[bytes](64)
        self._inbound_send: MemoryObjectSendStream[bytes] = send
        self.pending_timeout = limits.pending_timeout
        self.budget = budget or ByteBudget(limits.max_buffered_bytes)
        """Where the client's messages are counted until the application took them (the server's, shared)."""
        self._transport = _Transport(
            self, receive, self._route if websocket_sink is None else websocket_sink, self.budget
        )
        self.incoming = IncomingConnection(self, self._transport, peer, headers or {})
        """What the handler gets."""
        self._scope: anyio.CancelScope | None = None

    # -- lifetime ----------------------------------------------------------------------------------------

    async def run(
        self, handler: ConnectionHandler, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Run ``handler`` until the connection ends (DELETE, the client gone, an overflow, the handler returned);
        an HTTP connection whose stream is not opened within the pending timeout ends then."""
        try:
            with anyio.CancelScope() as self._scope:
                async with anyio.create_task_group() as tg:
                    if not self.websocket:
                        tg.start_soon(self._end_unless_started)
                    task_status.started()
                    try:
                        await handler(self.incoming)
                    except Exception:
                        self.log.exception(
                            "connection handlers that failed", "connection %s: its handler failed", self.connection_id
                        )
                    tg.cancel_scope.cancel()
        finally:
            self._inbound_send.close()  # a message fed from now on is refused, not left in the budget
            self._close_streams()
            self._transport.give_back_queued()
            self.ended.set()
            callbacks, self.close_callbacks = self.close_callbacks, []
            for callback in callbacks:
                _call(callback)

    async def _end_unless_started(self) -> None:
        with anyio.move_on_after(self.pending_timeout):
            await self.stream_opened.wait()
            return
        self.log.info(
            "connections ended for opening no stream",
            "connection %s: no SSE stream was opened; ending it",
            self.connection_id,
        )
        self.end()

    @property
    def started(self) -> bool:
        """Whether the client began to use the connection: a WebSocket has (its first message was
        ``initialize``); over HTTP, once the connection's stream was opened."""
        return self.websocket or self.stream_opened.is_set()

    def end(self) -> None:
        """End the connection now (the handler is cancelled; what it waits for from the client fails)."""
        self._inbound_send.close()
        if self._scope is not None:
            self._scope.cancel()
        self._close_streams()
        self._transport.give_back_queued()

    def _close_streams(self) -> None:
        self.connection_stream.close()
        for stream in self.session_streams.values():
            stream.close()
        self._initial_ready.set()

    # -- client -> application ---------------------------------------------------------------------------

    async def feed(self, inbound: Inbound) -> None:
        """Hand one POSTed (or WebSocket) message to the application, after noting where its answer goes; from
        then on its bytes, held in the budget by the caller, are the connection's to give back."""
        self.routes.expect_answer(inbound)
        try:
            await self._inbound_send.send(inbound.raw)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise anyio.ClosedResourceError from None

    async def initial_answer(self) -> bytes | None:
        """The initialize answer (None if the connection ended first)."""
        await self._initial_ready.wait()
        return self._initial

    # -- application -> client ---------------------------------------------------------------------------

    def session_stream(self, session_id: str) -> OutboundStream:
        stream = self.session_streams.get(session_id)
        if stream is None:
            if len(self.session_streams) >= MAX_SESSION_STREAMS:
                raise ConnectionOverflow
            stream = self.session_streams[session_id] = OutboundStream(self)
        return stream

    def stream_for(self, session_id: str | None) -> OutboundStream:
        """The stream a GET reads (``StreamBusy`` if it has a reader; ends the connection on overflow)."""
        try:
            stream = self.connection_stream if session_id is None else self.session_stream(session_id)
        except ConnectionOverflow:
            self.end()
            raise
        stream.acquire()
        if session_id is None:
            self.stream_opened.set()
        return stream

    async def _route(self, frames: list[bytes]) -> None:
        try:
            for frame in frames:
                self._push(self.routes.route(frame), frame)
        except ConnectionOverflow:
            self._overflowed()

    def _overflowed(self) -> NoReturn:
        self.log.warning(
            "connections ended for not reading their streams",
            "connection %s: its client does not read its streams; ending it",
            self.connection_id,
        )
        self.end()
        raise anyio.BrokenResourceError from None

    async def send_notifications(self, session_id: str, method: str, params: list[bytes]) -> None:
        """``IncomingConnection.send_notifications``: the frames (or the SSE events) made here, in one pass."""
        if self.ended.is_set():
            raise anyio.BrokenResourceError  # nobody reads them any more
        if not params:
            return
        prefix = b'{"jsonrpc":"2.0","method":' + msgspec.json.encode(method) + b',"params":'
        if self.websocket_sink is not None:
            await self.websocket_sink([prefix + encoded + b"}" for encoded in params])
            return
        joined = b"".join(params)
        if b"\n" in joined or b"\r" in joined:  # a line break to take out: each as ``sse_event`` makes it
            events = b"".join([sse_event(prefix + encoded + b"}") for encoded in params])
        else:
            head = b"data: " + prefix
            events = b"".join([head + encoded + b"}\n\n" for encoded in params])
        try:
            self.session_stream(session_id).push(SseEvents(events))
        except ConnectionOverflow:
            self._overflowed()

    def _push(self, route: Route, frame: bytes) -> None:
        if route == INITIAL:
            self._initial = frame
            self._initial_ready.set()
        elif route == CONNECTION or not isinstance(route, tuple):
            self.connection_stream.push(frame)
        else:
            self.session_stream(route[1]).push(frame)
