"""One remote ACP connection (an ``Acp-Connection-Id``): a ``ReferenceAgent`` on an rpc ``Connection`` over a
frame transport that takes the client's messages from POSTs (or a WebSocket) and routes the agent's messages to
the initialize POST's body, the connection's SSE stream or a session's SSE stream.

A stream holds what its reader has not taken yet, so an answer written before the client opened the stream is
not lost; the bytes a connection holds are bounded, and a client that lets them pile up past the bound loses the
connection (the server's sessions go on; a resume finds them). The client's messages waiting for the agent count in
the server's ``ByteBudget`` until the agent takes them (``limits``).
"""

from __future__ import annotations

import collections
import logging
import secrets
from collections.abc import Awaitable, Callable

import anyio
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from acp_session.rpc import Connection
from acp_session.transport import PeerExit
from acp_session.transport.framing import Frame

from .limits import DEFAULT_LIMITS, ByteBudget, ServerLimits
from .remote_rules import CONNECTION, INITIAL, Inbound, OutboundRoutes, Route
from .server import AgentOptions, ReferenceAgent
from .shared import SharedSessions

__all__ = [
    "MAX_BUFFERED_BYTES",
    "ConnectionOverflow",
    "MAX_SESSION_STREAMS",
    "OutboundStream",
    "RemoteConnection",
    "StreamBusy",
]

_log = logging.getLogger("acp_conformance.agent")

MAX_BUFFERED_BYTES = 32 * 1024 * 1024
"""Bytes one connection may hold for readers that have not taken them; past it the connection ends."""
MAX_SESSION_STREAMS = 1024
"""Session streams one connection may have; a client that needs more loses the connection."""


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

    async def next(self, keep_alive: float) -> bytes | None:
        """The next message; None when ``keep_alive`` seconds passed without one; EndOfStream once closed."""
        with anyio.move_on_after(keep_alive):
            while not self._queue:
                if self.closed:
                    raise anyio.EndOfStream
                self._wake = anyio.Event()
                await self._wake.wait()
            frame = self._queue.popleft()
            self._owner.buffered -= len(frame)
            return frame
        return None


class _Transport:
    """The ``FrameTransport`` under the rpc ``Connection``: frames in from the client, routed frames out."""

    def __init__(
        self,
        inbound: MemoryObjectReceiveStream[bytes],
        sink: Callable[[list[bytes]], Awaitable[None]],
        budget: ByteBudget,
    ) -> None:
        self._inbound = inbound
        self._sink = sink
        self._budget = budget

    async def receive_frames(self) -> list[Frame]:
        taken = [await self._inbound.receive()]
        while True:
            try:
                taken.append(self._inbound.receive_nowait())
            except (anyio.WouldBlock, anyio.EndOfStream):
                self._budget.give_back(sum(map(len, taken)))  # the agent has them now
                frames: list[Frame] = list(taken)
                return frames

    def give_back_queued(self) -> None:
        """The messages the agent will never take (the connection ended) leave the budget."""
        while True:
            try:
                self._budget.give_back(len(self._inbound.receive_nowait()))
            except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                return

    async def send_frames(self, frames: list[bytes]) -> None:
        await self._sink(frames)

    async def aclose(self) -> None:
        self._inbound.close()

    async def peer_exit(self) -> PeerExit:
        return PeerExit()


class RemoteConnection:
    """An ``Acp-Connection-Id``: the agent behind it, its streams, and how it ends."""

    def __init__(
        self,
        websocket_sink: Callable[[list[bytes]], Awaitable[None]] | None = None,
        broken: frozenset[str] = frozenset(),
        limits: ServerLimits = DEFAULT_LIMITS,
        budget: ByteBudget | None = None,
    ) -> None:
        self.connection_id = secrets.token_urlsafe(18)
        self.cookie = secrets.token_urlsafe(12)
        """The affinity cookie's value for this connection (a load balancer would route on it)."""
        self.routes = OutboundRoutes(answers_on_connection="wrong-stream" in broken)
        self.connection_stream = OutboundStream(self)
        self.session_streams: dict[str, OutboundStream] = {}
        self.buffered = 0
        self.stream_opened = anyio.Event()
        self.ended = anyio.Event()
        self._initial: bytes | None = None
        self._initial_ready = anyio.Event()
        self._websocket_sink = websocket_sink
        self.websocket = websocket_sink is not None
        send, receive = anyio.create_memory_object_stream[bytes](64)
        self._inbound_send: MemoryObjectSendStream[bytes] = send
        self.pending_timeout = limits.pending_timeout
        self.budget = budget or ByteBudget(limits.max_buffered_bytes)
        """Where the client's messages are counted until the agent took them (the server's, shared)."""
        self._transport = _Transport(receive, self._route if websocket_sink is None else websocket_sink, self.budget)
        self._scope: anyio.CancelScope | None = None

    # -- lifetime ----------------------------------------------------------------------------------------

    async def run(
        self,
        shared: SharedSessions,
        options: AgentOptions,
        *,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Serve the agent until the connection ends (DELETE, the client gone, an overflow); its sessions stay."""
        agent: ReferenceAgent | None = None
        try:
            with anyio.CancelScope() as self._scope:
                async with Connection(self._transport, peer_name=f"remote client {self.connection_id}") as rpc:
                    agent = ReferenceAgent(rpc, shared.tg, options, shared=shared)
                    task_status.started()
                    if self._websocket_sink is None:
                        with anyio.move_on_after(self.pending_timeout) as wait:
                            await self.stream_opened.wait()
                        if wait.cancelled_caught:
                            _log.info("connection %s: no SSE stream was opened; ending it", self.connection_id)
                            return
                    await rpc.wait_closed()
        finally:
            if agent is not None:
                shared.detach(agent)
            self._inbound_send.close()  # a message fed from now on is refused, not left in the budget
            self._close_streams()
            self._transport.give_back_queued()
            self.ended.set()

    @property
    def started(self) -> bool:
        """Whether the client began to use the connection: a WebSocket has (its first message was
        ``initialize``); over HTTP, once the connection's stream was opened."""
        return self.websocket or self.stream_opened.is_set()

    def end(self) -> None:
        """End the connection now (its pending agent requests fail, which a resumed session asks again)."""
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

    # -- client -> agent ---------------------------------------------------------------------------------

    async def feed(self, inbound: Inbound) -> None:
        """Hand one POSTed (or WebSocket) message to the agent, after noting where its answer goes; from then on
        its bytes, held in the budget by the caller, are the connection's to give back."""
        self.routes.expect_answer(inbound)
        try:
            await self._inbound_send.send(inbound.raw)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            raise anyio.ClosedResourceError from None

    async def initial_answer(self) -> bytes | None:
        """The initialize answer (None if the connection ended first)."""
        await self._initial_ready.wait()
        return self._initial

    # -- agent -> client ---------------------------------------------------------------------------------

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
            _log.warning("connection %s: its client does not read its streams; ending it", self.connection_id)
            self.end()
            raise anyio.BrokenResourceError from None

    def _push(self, route: Route, frame: bytes) -> None:
        if route == INITIAL:
            self._initial = frame
            self._initial_ready.set()
        elif route == CONNECTION or not isinstance(route, tuple):
            self.connection_stream.push(frame)
        else:
            self.session_stream(route[1]).push(frame)
