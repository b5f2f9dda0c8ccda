"""The anyio driver around ``RpcCore``: one reader task, one writer task, handler dispatch.

Ordering and concurrency rules:
- incoming notifications are handled strictly in arrival order. A sync handler runs inline in the reader
  when nothing is queued ahead of it (cheap: no task, no queue hop); otherwise, and for async handlers, the
  notification goes through a bounded queue to one consumer task. The reader therefore keeps reading
  responses while an async notification handler awaits a request on this same connection;
- each incoming request runs in its own task (at most ``max_concurrent_requests`` at once; a request that only
  waits, ``on_request(waits=True)``, takes no slot); large answers share a byte budget (``budget.py``);
- outgoing frames go through one ordered write queue, so ``request()`` and ``cancel()`` need no await.

The connection works on frames (whole messages) from a ``FrameTransport``: a byte stream gets its newline
framing from the transport layer (``transport.lines.frame_transport``). What the running event loop offers
(asyncio's lean futures, ``call_soon``, its ready queue) comes from ``transport.backend``, and a transport's
fast paths are found once, on entry, by ``isinstance(..., FastPathTransport)``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sized
from types import TracebackType
from typing import Any, TypeVar, overload

import anyio
import msgspec
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectSendStream

from .._counted_log import CountedLog
from ..errors import (
    ConnectionClosed,
    MessageTooLarge,
)
from ..transport.backend import Flag, Waiter, current_backend
from ..transport.base import FastPathTransport, FrameTransport, Transport
from ..transport.framing import DEFAULT_MAX_FRAME_SIZE
from ..transport.lines import frame_transport
from .budget import DEFAULT_ANSWER_BUDGET, AnswerBudget
from .core import (
    RpcCore,
)
from .handlers import Decoder, Handler, as_decoder, json_decode
from .incoming import RECEIPT, IncomingRequestHook, IncomingRequests
from .messages import RequestId
from .outbox import Outbox
from .pending import PendingRequest
from .reading import FrameErrorCallback, ReadSide

__all__ = [
    "DEFAULT_ANSWER_BUDGET",
    "DEFAULT_BUSY_POLL",
    "DEFAULT_MAX_PARKED_REQUESTS",
    "MAX_BUSY_POLL",
    "Connection",
    "FallbackNotificationHandler",
    "FallbackRequestHandler",
    "FrameErrorCallback",
]

_log = logging.getLogger("acp_session.rpc")
T = TypeVar("T")

FallbackRequestHandler = Callable[[str, bytes], Any]
"""``(method, raw params JSON) -> result`` (sync or async) for methods without their own handler."""
FallbackNotificationHandler = Callable[[str, bytes], Any]


DEFAULT_NOTIFICATION_QUEUE_SIZE = 16_384
"""Notifications held for an async handler before the reader pauses (a few MiB of decoded chunk updates).

Large enough that a handler awaiting a request on this connection gets its answer even when the agent
streams thousands of updates first; bounded so a stuck handler slows the agent down instead of growing
memory without limit (see docs/design.md, "Ordering, concurrency, backpressure")."""


DEFAULT_BUSY_POLL = 50e-6
"""Seconds a caller awaiting a request polls the pipe for the answer before it goes to sleep.

A round trip to a nearby agent takes tens of microseconds, and on a virtual machine as much again goes to
putting the waiting process to sleep and waking it (the guest halts its vCPU; the host must reschedule
it), plus a pass of the event loop. Polling for a moment first answers most quick requests without
either: on the benchmark's VM it halves the round trip (docs/performance.md). It is cheap elsewhere: it
only happens on asyncio over the agent's pipes, stops as soon as any other callback is ready to run, and
costs at most this much CPU time per request. While it polls, nothing else on the event loop runs (a due
timer waits too), hence the small value and ``MAX_BUSY_POLL``. ``Connection(busy_poll=0)`` (or the same
option to ``ClientBuilder.connect``/``spawn``) turns it off."""
MAX_BUSY_POLL = 0.01
"""The largest ``busy_poll`` accepted: it is meant for microseconds, not for holding the event loop."""
DEFAULT_MAX_PARKED_REQUESTS = 4096
"""Requests of a waiting kind (``on_request(waits=True)``: ``terminal/wait_for_exit``) that run at once, each
holding no concurrency slot, so a peer's pile of them never stops the reader; past this many they queue for a
slot like any other request."""


class Connection(ReadSide):
    """A bidirectional JSON-RPC 2.0 peer; use as ``async with Connection(t) as c``.

    ``t`` is a byte ``Transport`` (framed with newlines by the transport layer; an agent's pipes get the fast
    paths) or a message-framed ``FrameTransport`` (used as it is; ``max_frame_size`` is then its business).
    """

    def __init__(
        self,
        transport: Transport | FrameTransport,
        *,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        notification_queue_size: int = DEFAULT_NOTIFICATION_QUEUE_SIZE,
        max_concurrent_requests: int = 256,
        write_high_water: int = 4 * 1024 * 1024,
        close_flush_timeout: float = 1.0,
        on_frame_error: FrameErrorCallback | None = None,
        busy_poll: float = DEFAULT_BUSY_POLL,
        peer_name: str | None = None,
        answer_budget: int = DEFAULT_ANSWER_BUDGET,
        max_parked_requests: int = DEFAULT_MAX_PARKED_REQUESTS,
    ) -> None:
        if not 0 <= busy_poll <= MAX_BUSY_POLL:
            raise ValueError(f"busy_poll must be between 0 and {MAX_BUSY_POLL} seconds, not {busy_poll!r}")
        self.transport = transport
        """What this connection was given: a byte ``Transport`` or a ``FrameTransport``."""
        self._frames: FrameTransport = frame_transport(transport, max_frame_size)
        self.busy_poll = busy_poll
        self.max_frame_size = max_frame_size
        self.close_flush_timeout = close_flush_timeout
        self.on_frame_error = on_frame_error
        self.peer_name = peer_name or "the peer"
        """Who is at the other end, for log messages (``ClientBuilder.spawn`` passes the agent's command)."""
        self.bad_frames = 0
        self.frames_read = 0
        """Frames the reader task has read so far (a lone answer taken on the fast path aside): how a liveness check
        tells a silent peer from a busy one."""
        """Incoming frames that broke the rules so far (each was answered or dropped as the rules say)."""
        self.peer_log = CountedLog(_log, self.peer_name)
        """The peer's mistakes that can come once per message (bad frames, answers to unknown ids, failing
        handlers): each kind logged once, then counted (``_counted_log``); the totals are logged at close."""
        self._core: RpcCore[PendingRequest[Any]] = RpcCore(self.peer_log)
        self._outbox = Outbox(write_high_water)
        self._requests: dict[str, Handler] = {}
        self._notifications: dict[str, Handler] = {}
        self._fallback_notification: FallbackNotificationHandler | None = None
        self._queue_size = notification_queue_size
        self._backlog = 0  # notifications queued or being handled by the consumer task
        self.answer_budget = AnswerBudget(answer_budget)
        """Bytes of large answers in flight (``budget.py``; ``reserve_answer`` in a handler waits for room)."""
        self._incoming = IncomingRequests(
            self._core, self._outbox, self._requests, self.answer_budget, max_concurrent_requests, max_parked_requests
        )
        self._scopes = self._incoming.scopes
        self._tg: TaskGroup | None = None
        self._notify_send: MemoryObjectSendStream[tuple[Any, Any]] | None = None
        self._closed_error: ConnectionClosed | None = None
        self._closed = anyio.Event()
        self._closing = False
        self._closed_here = False
        self._answered = False  # a response was handed to its waiting caller during this read
        # Bound on entry from the running backend (transport.backend) and the transport's fast paths.
        self._yield_to_callers: Callable[[], Awaitable[None]] = anyio.lowlevel.cancel_shielded_checkpoint
        self._link = _Link(self)
        self.request_params_hook: Callable[[str, Any], Any] | None = None
        """``(method, params) -> params`` applied to each outgoing request before it is encoded (None: off).
        Opt-in telemetry (``acp_session.telemetry``) adds W3C trace context to ``_meta`` with it."""

    # -- registration ----------------------------------------------------------------------------------

    def on_request(
        self,
        method: str,
        handler: Callable[[Any], Any],
        decode: Decoder = json_decode,
        *,
        waits: bool = False,
        lossless: bool = False,
        inline: bool = False,
    ) -> None:
        """Answer ``method`` with ``handler(decode(params))`` (sync or async), run in its own task.

        Raise an ``RpcError`` subclass to answer with that error; any other exception becomes a generic
        ``-32603`` (details are only logged). Params that fail ``decode`` get ``-32602``.

        ``waits``: the handler only waits for something to happen (an exit), so it runs without taking one of
        the ``max_concurrent_requests`` slots (up to ``max_parked_requests`` of them). ``lossless``: a frame
        that decoded only after lone surrogate escapes were replaced is answered ``-32602`` instead of handled
        (for a handler that must not act on altered text: writing a file). ``inline``: a plain (sync) handler the
        reader runs itself, before it reads the next message, for a request whose effect the messages after it
        depend on (an agent's ``initialize`` fixes the protocol version, and with it how a pipelined
        ``session/new`` is read: the handlers it registers are the ones that message finds). It must not block;
        it takes no slot and is not wrapped by ``incoming_request_hook``.
        """
        self._requests[method] = Handler.of(handler, decode, waits=waits, lossless=lossless, inline=inline)

    def on_notification(
        self,
        method: str,
        handler: Callable[[Any], Any],
        decode: Decoder | type[msgspec.Struct] = json_decode,
        *,
        batch: Callable[[list[Any]], Any] | None = None,
    ) -> None:
        """Call ``handler(decode(params))`` for each ``method`` notification, in arrival order.

        ``decode`` may also be a msgspec ``Struct`` type (decoded with ``msgspec.json.Decoder(type)``).
        When it is a bound ``msgspec.json.Decoder(T).decode``, an ``acp_session.codec.decoder(T)`` or a
        ``Struct`` type, well-formed frames of ``method`` are decoded in one pass, envelope and params
        together (see ``fastpath.py``); anything that fails that pass takes the generic path unchanged.

        ``batch`` (sync ``handler`` only) takes a list of two or more consecutive params of ``method`` that arrived in
        one read and were decoded in one pass, while nothing is queued ahead of them. It must do what
        ``handler`` does on each, in order (it may return an awaitable, finished before anything later);
        it saves a call per notification on streams of updates. An exception it raises is logged.
        """
        self._notifications[method] = Handler.of(handler, as_decoder(decode), batch)
        self._core.set_notification_handlers(self._notifications)

    def set_fallback_request_handler(self, handler: FallbackRequestHandler | None) -> None:
        """Handle requests for unregistered methods (default: ``-32601``)."""
        self._incoming.fallback = handler

    @property
    def incoming_request_hook(self) -> IncomingRequestHook | None:
        """``(method, params, handling) -> awaitable`` around the handling of each request the peer sends (None:
        off, the default: one check per request). Opt-in telemetry (``acp_session.telemetry``) puts a span around
        each with it. It must await ``handling`` and pass its result or exception on unchanged."""
        return self._incoming.hook

    @incoming_request_hook.setter
    def incoming_request_hook(self, hook: IncomingRequestHook | None) -> None:
        self._incoming.hook = hook

    def set_fallback_notification_handler(self, handler: FallbackNotificationHandler | None) -> None:
        """Handle notifications for unregistered methods (default: logged at debug level and dropped)."""
        self._fallback_notification = handler

    # -- lifecycle -------------------------------------------------------------------------------------

    async def __aenter__(self) -> Connection:
        if self._tg is not None:
            raise RuntimeError("a Connection can be entered only once")
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = self._incoming.tg = tg
        backend = current_backend()
        link = self._link
        link.new_flag = backend.new_flag
        link.new_waiter = backend.new_waiter
        # How the reader lets answered callers run first: the cheapest yield the backend has.
        self._yield_to_callers = backend.yield_to_callers
        frames = self._frames
        if isinstance(frames, FastPathTransport):
            self._outbox.bind(backend.new_flag, backend.call_soon, frames.send_nowait)
            frames.set_ready_consumer(self._take_ready_response)
            # Busy polling needs the loop's ready queue: it stops as soon as anything else could run.
            if self.busy_poll > 0 and backend.ready_queue is not None:
                link.enable_busy_poll(frames.poll_ready, backend.ready_queue, self.busy_poll)
        else:
            self._outbox.bind(backend.new_flag, backend.call_soon)
        send, receive = anyio.create_memory_object_stream[tuple[Any, Any]](self._queue_size)
        self._notify_send = send
        tg.start_soon(self._outbox_writer)
        tg.start_soon(self._notification_consumer, receive)
        tg.start_soon(self._read_loop)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        await self.aclose()
        assert self._tg is not None
        return await self._tg.__aexit__(exc_type, exc, tb)

    @property
    def closed(self) -> bool:
        """True once the peer's stream ended or ``aclose()`` was called."""
        return self._closed_error is not None

    @property
    def closed_locally(self) -> bool:
        """True when ``aclose()`` closed it here before the peer's end was seen (a reconnect policy leaves such a
        connection closed); False for a peer that went away, even if ``aclose()`` ran afterwards."""
        return self._closed_here

    @property
    def close_reason(self) -> ConnectionClosed | None:
        return self._closed_error

    async def wait_closed(self) -> ConnectionClosed:
        """Wait until the connection is closed (for agents: until the client goes away)."""
        await self._closed.wait()
        assert self._closed_error is not None
        return self._closed_error

    async def aclose(self) -> None:
        """Answer in-flight incoming requests with ``-32800``, fail our pending requests, flush, close."""
        if self._closing:
            return
        self._closing = True
        self._closed_here = self._closed_error is None
        with anyio.CancelScope(shield=True):
            for scope in list(self._scopes.values()):
                scope.cancel()
            self._incoming.start_waiting_cancelled()
            self._mark_closed(ConnectionClosed("connection closed locally"))
            with anyio.move_on_after(self.close_flush_timeout):
                while self._scopes:  # let cancelled handlers queue their -32800 replies
                    await anyio.sleep(0.001)
                await self._outbox.wait_flushed()
            self._outbox.fail()
            await self._frames.aclose()
        if self._tg is not None:
            self._tg.cancel_scope.cancel()

    # -- outgoing --------------------------------------------------------------------------------------

    @overload
    def request(self, method: str, params: Any = None, *, timeout: float | None = None) -> PendingRequest[Any]: ...

    @overload
    def request(
        self, method: str, params: Any = None, *, decode: Callable[[bytes], T], timeout: float | None = None
    ) -> PendingRequest[T]: ...

    def request(
        self,
        method: str,
        params: Any = None,
        *,
        decode: Callable[[bytes], Any] = json_decode,
        timeout: float | None = None,
    ) -> PendingRequest[Any]:
        """Queue a request now (ids are allocated in call order) and return its awaitable handle.

        ``params`` is anything msgspec can encode (a Struct, a dict, None to omit). Raises
        ``ConnectionClosed`` if the connection is closed, ``TypeError`` if params cannot be encoded, and
        ``MessageTooLarge`` (nothing sent) if the request is larger than ``max_frame_size``: a peer with the
        same limit would skip it and never answer.
        """
        if self._closed_error is not None or self._tg is None:
            self._check_open()
        hook = self.request_params_hook
        if hook is not None:
            params = hook(method, params)
        core = self._core
        id, frame = core.request_frame(method, params)
        if len(frame) > self.max_frame_size:
            raise MessageTooLarge(len(frame), self.max_frame_size, outgoing=True)
        # Sent before the bookkeeping: on a pipe it is written right here, and the peer starts on it sooner.
        # Nothing can be received before this returns, so registering the handle afterwards is safe.
        self._outbox.put_request(frame)
        handle: PendingRequest[Any] = PendingRequest(self._link, id, method, decode, timeout)
        core.expect(id, handle)
        return handle

    async def notify(self, method: str, params: Any = None) -> None:
        """Send a notification; waits only when the write queue is over its high-water mark."""
        self._check_open()
        frame = self._core.notification_frame(method, params)
        if len(frame) > self.max_frame_size:
            raise MessageTooLarge(len(frame), self.max_frame_size, outgoing=True)
        self._outbox.put(frame)
        if self._outbox.size > self._outbox.high_water:
            await self._outbox.wait_writable()

    async def notify_encoded(self, method: str, params: list[bytes]) -> None:
        """Notifications of ``method`` whose params are encoded JSON already (a relay's logged updates), queued
        together: each frame put around its params as ``notify`` would encode it, the write queue's high-water
        mark checked once for the lot. ``MessageTooLarge`` for a frame over ``max_frame_size`` (the ones before
        it are queued)."""
        self._check_open()
        prefix = b'{"jsonrpc":"2.0","method":' + msgspec.json.encode(method) + b',"params":'
        limit = self.max_frame_size - len(prefix) - 1
        if params and max(map(len, params)) <= limit:
            self._outbox.put_many([prefix + encoded + b"}" for encoded in params])
        else:
            put = self._outbox.put
            for encoded in params:
                if len(encoded) > limit:
                    raise MessageTooLarge(len(encoded) + len(prefix) + 1, self.max_frame_size, outgoing=True)
                put(prefix + encoded + b"}")
        if self._outbox.size > self._outbox.high_water:
            await self._outbox.wait_writable()

    async def queued_written(self) -> None:
        """Return once every frame queued so far was handed to the transport (written by this task when no other
        is writing): a caller that then sends on the transport by a way of its own, before its next ``await``
        (``server.IncomingConnection.send_notifications``), keeps its place after them. ``ConnectionClosed``
        once closed."""
        self._check_open()
        outbox = self._outbox
        if outbox.size:
            await self._flush()
            await outbox.wait_flushed()

    def _check_open(self) -> None:
        if self._closed_error is not None:
            raise self._closed_error
        if self._tg is None:
            raise RuntimeError("use the Connection as `async with Connection(transport) as conn:`")

    def _send_cancel(self, id: RequestId) -> None:
        if self._closed_error is None:
            frame = self._core.cancel_frame(id)
            if frame is not None:
                self._outbox.put(frame)

    async def _flush(self) -> None:
        await self._outbox.flush(self._frames.send_frames)

    def _expire(self, handle: PendingRequest[Any]) -> None:
        if not handle.cancel_sent:
            self._send_cancel(handle.id)  # let the peer stop working on it
        self._core.forget(handle.id)
        handle._timed_out()

    # -- tasks -----------------------------------------------------------------------------------------

    async def _outbox_writer(self) -> None:
        await self._outbox.run(self._frames.send_frames)
        if self._closed_error is None:
            # Writing failed: the peer is gone. The reader normally sees EOF too; make sure nothing hangs.
            with anyio.move_on_after(0.05):
                await self._closed.wait()
            if self._closed_error is None:
                info = await self._frames.peer_exit()
                self._mark_closed(
                    ConnectionClosed(
                        info.reason or "writing to the peer failed",
                        exit_code=info.exit_code,
                        stderr_tail=info.stderr_tail,
                    )
                )

    # -- incoming requests -----------------------------------------------------------------------------

    @property
    def requests_received(self) -> int:
        """How many requests the peer has sent that this side has read; each request's ``request_receipt()``
        is its place in that count (0 for the first), so upper layers can tell what came before what."""
        return self._incoming.received

    @staticmethod
    def request_receipt() -> int | None:
        """Inside a request handler: the request's receipt number (see ``requests_received``); else None."""
        return RECEIPT.get()

    def waiting_requests(self) -> list[tuple[str, msgspec.Raw | None]]:
        """``(method, params)`` of the requests read but waiting for a free slot (not started yet)."""
        return [(event.method, event.params) for event, _, _ in self._incoming.waiting]


class _Link:
    """A connection's ``RequestLink``: all its ``PendingRequest``s may ask of it (see ``pending.py``)."""

    __slots__ = ("_conn", "_outbox", "_poll", "_poll_time", "_ready", "new_flag", "new_waiter")

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._outbox = conn._outbox
        self._poll: Callable[[], bool | None] | None = None  # set on entry when busy polling is possible
        self._ready: Sized = ()
        self._poll_time = 0.0
        self.new_flag: Callable[[], Flag] = anyio.Event  # the backend's own flag type once entered
        self.new_waiter: Callable[[], Waiter] | None = None

    def enable_busy_poll(self, poll: Callable[[], bool | None], ready: Sized, seconds: float) -> None:
        """Poll with ``poll`` (``FastPathTransport.poll_ready``) for up to ``seconds`` while ``ready`` (the
        loop's queue of ready callbacks) is empty (see ``DEFAULT_BUSY_POLL``)."""
        self._poll, self._ready, self._poll_time = poll, ready, seconds

    def before_wait(self, handle: PendingRequest[Any]) -> Awaitable[None] | None:
        if self._outbox.size:
            return self._flush_then_poll(handle)  # write our request rather than wait for the writer
        poll = self._poll
        if poll is not None:
            # Busy polling, inline (this is every request's path): stops as soon as the answer is in, anything
            # else is ready to run (another caller was answered, the reader task was handed data, ...), the
            # pipe cannot be polled now, or the time is up.
            ready = self._ready
            clock = time.perf_counter
            deadline = clock() + self._poll_time
            # ``_finished`` rather than the ``done`` property: a call less per turn of the loop.
            while not handle._finished and not ready and poll() is not None and clock() < deadline:
                pass
        return None

    async def _flush_then_poll(self, handle: PendingRequest[Any]) -> None:
        await self._conn._flush()
        if self._poll is not None and not self._outbox.size:
            self.before_wait(handle)  # a quick answer is taken without going to sleep

    def send_cancel(self, id: RequestId) -> None:
        self._conn._send_cancel(id)

    def expire(self, handle: PendingRequest[Any]) -> None:
        self._conn._expire(handle)
