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

import inspect
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Sized
from contextvars import ContextVar
from operator import attrgetter
from types import TracebackType
from typing import Any, TypeVar, overload

import anyio
import msgspec
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..errors import (
    AcpError,
    ConnectionClosed,
    InternalError,
    InvalidParams,
    InvalidRequest,
    MessageTooLarge,
    MethodNotFound,
    ParseError,
    RequestCancelled,
    RpcError,
)
from ..transport.backend import Flag, Waiter, current_backend
from ..transport.base import FastPathTransport, FrameTransport, Transport
from ..transport.framing import DEFAULT_MAX_FRAME_SIZE, Frame
from ..transport.lines import STREAM_END, frame_transport
from .budget import CURRENT_ANSWER, DEFAULT_ANSWER_BUDGET, AnswerBudget, AnswerTicket
from .core import (
    NOT_A_RESPONSE,
    TOO_DEEP,
    CancelRequested,
    FrameTooLarge,
    NotificationReceived,
    ProtocolViolation,
    RequestReceived,
    ResponseReceived,
    RpcCore,
    TypedNotifications,
)
from .handlers import DECODE_ERRORS, Decoder, Handler, as_decoder, invalid_params, json_decode
from .messages import RequestId
from .outbox import Outbox
from .pending import PendingRequest

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
FrameErrorCallback = Callable[[AcpError], None]
"""Told about frames that broke the rules: ``MessageTooLarge``, ``ParseError``, ``InvalidRequest``, ...

Without one, the first bad frame of each kind is logged as a warning naming the peer and quoting the start
of the line; later ones are only counted (``Connection.bad_frames``) and logged at debug level."""

_AWAIT = object()  # queue marker: the item is an awaitable left by a sync handler; finish it in order
FAIR_SHARE_FRAMES = 1024
"""After this many frames read without a pause, the reader lets the event loop run once before reading on."""

_CALL = object()  # queue marker: the item is (method, handler, params already decoded by the fast path)
_RECEIPT: ContextVar[int | None] = ContextVar("acp_session_request_receipt", default=None)
_SETTLE = object()  # queue marker: the item is an answered request whose done callbacks must follow the queued items
_PARAMS_OF = attrgetter("params")


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
_TRACKED_ANSWER = 64 * 1024  # an answer frame at least this large counts against the budget until written


class Connection:
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
        """Incoming frames that broke the rules so far (each was answered or dropped as the rules say)."""
        self._reported_kinds: set[type[AcpError]] = set()
        self._core: RpcCore[PendingRequest[Any]] = RpcCore()
        self._outbox = Outbox(write_high_water)
        self._requests: dict[str, Handler] = {}
        self._notifications: dict[str, Handler] = {}
        self._fallback_request: FallbackRequestHandler | None = None
        self._fallback_notification: FallbackNotificationHandler | None = None
        self._queue_size = notification_queue_size
        self._backlog = 0  # notifications queued or being handled by the consumer task
        # Incoming requests: at most max_concurrent_requests run; more wait in a bounded queue (the reader keeps
        # reading, so a $/cancel_request for a waiting one is seen at once); past that bound the reader waits.
        self._free_slots = max_concurrent_requests
        self._waiting: deque[tuple[RequestReceived, Handler | None, int]] = deque()
        self._waiting_limit = 4 * max_concurrent_requests
        self._parked = 0  # requests of a waiting kind running without a slot
        self._max_parked = max_parked_requests
        self.answer_budget = AnswerBudget(answer_budget)
        """Bytes of large answers in flight (``budget.py``; ``reserve_answer`` in a handler waits for room)."""
        self._slot_freed = anyio.Event()
        self._requests_received = 0
        self._scopes: dict[RequestId, anyio.CancelScope] = {}
        self._tg: TaskGroup | None = None
        self._notify_send: MemoryObjectSendStream[tuple[Any, Any]] | None = None
        self._closed_error: ConnectionClosed | None = None
        self._closed = anyio.Event()
        self._closing = False
        self._answered = False  # a response was handed to its waiting caller during this read
        # Bound on entry from the running backend (transport.backend) and the transport's fast paths.
        self._yield_to_callers: Callable[[], Awaitable[None]] = anyio.lowlevel.cancel_shielded_checkpoint
        self._link = _Link(self)

    # -- registration ----------------------------------------------------------------------------------

    def on_request(
        self,
        method: str,
        handler: Callable[[Any], Any],
        decode: Decoder = json_decode,
        *,
        waits: bool = False,
        lossless: bool = False,
    ) -> None:
        """Answer ``method`` with ``handler(decode(params))`` (sync or async), run in its own task.

        Raise an ``RpcError`` subclass to answer with that error; any other exception becomes a generic
        ``-32603`` (details are only logged). Params that fail ``decode`` get ``-32602``.

        ``waits``: the handler only waits for something to happen (an exit), so it runs without taking one of
        the ``max_concurrent_requests`` slots (up to ``max_parked_requests`` of them). ``lossless``: a frame
        that decoded only after lone surrogate escapes were replaced is answered ``-32602`` instead of handled
        (for a handler that must not act on altered text: writing a file).
        """
        self._requests[method] = Handler.of(handler, decode, waits=waits, lossless=lossless)

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
        self._fallback_request = handler

    def set_fallback_notification_handler(self, handler: FallbackNotificationHandler | None) -> None:
        """Handle notifications for unregistered methods (default: logged at debug level and dropped)."""
        self._fallback_notification = handler

    # -- lifecycle -------------------------------------------------------------------------------------

    async def __aenter__(self) -> Connection:
        if self._tg is not None:
            raise RuntimeError("a Connection can be entered only once")
        tg = anyio.create_task_group()
        await tg.__aenter__()
        self._tg = tg
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
        with anyio.CancelScope(shield=True):
            for scope in list(self._scopes.values()):
                scope.cancel()
            self._start_waiting_cancelled()
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
                        "writing to the peer failed", exit_code=info.exit_code, stderr_tail=info.stderr_tail
                    )
                )

    def _take_ready_response(self, frame: bytes) -> bool:
        """Settle a lone response inside the transport's readiness callback (``FastPathTransport``).

        ``frame`` is one whole frame that arrived while the reader task waits. Only a frame that ``RpcCore``
        recognises as a response is taken, and only when no notification is queued ahead of it; anything
        else is left untouched for the reader task. A round trip then wakes only its caller, one task switch
        fewer. Notifications are told apart by the decoder, not by a search for ``"method"`` (``bytes.find``
        costs about 2 us right after a wake-up; see docs/performance.md).
        """
        if self._backlog:  # notifications are queued ahead: the reader task keeps the order
            return False
        event = self._core.receive_response(frame)
        if type(event) is ResponseReceived:
            self._settle(event)
        elif event is NOT_A_RESPONSE:
            return False
        elif type(event) is ProtocolViolation:
            self._violation(event, frame)
        return True

    async def _read_loop(self) -> None:
        """Read blocks of frames until the peer's end; dispatch each block in wire order, then pace the reader."""
        receive = self._frames.receive_frames
        outbox = self._outbox
        unyielded = 0  # frames read since this task last let others run
        try:
            while True:
                try:
                    frames = await receive()
                except STREAM_END:
                    break
                unyielded += len(frames)
                await self._dispatch_frames(frames)
                if self._answered or unyielded >= FAIR_SHARE_FRAMES or outbox.size > outbox.high_water:
                    unyielded = await self._pace(unyielded)  # tested first: most blocks need no pause
        finally:
            with anyio.CancelScope(shield=True):
                await self._reader_ended()

    async def _dispatch_frames(self, frames: list[Frame]) -> None:
        """The core classifies one block (one decoder for every frame); this only dispatches, in wire order."""
        receive_block = self._core.receive_block
        notification_handlers = self._notifications
        while True:
            for event in receive_block(frames):
                if type(event) is TypedNotifications:
                    # The hottest path: a run of typed notifications, each frame decoded in one msgspec pass.
                    if event.handler.batch is not None and not self._backlog and len(event.messages) > 1:
                        outcome = self._typed_batch(event)  # a plain call: no coroutine per run
                        if outcome is not None:
                            await self._enqueue(_AWAIT, outcome)
                        continue
                    rest = await self._typed_one_by_one(event)
                    if rest is not None:  # a handler registered another method: the rest is decoded again
                        frames = frames[rest:]
                        break
                    continue
                if type(event) is NotificationReceived:
                    # Kept free of awaits: a sync notification handler with nothing queued.
                    sync = notification_handlers.get(event.method)
                    if sync is not None and not sync.is_async and self._backlog == 0:
                        outcome = self._run_sync_notification(sync, event)
                        if outcome is not None:
                            await self._enqueue(_AWAIT, outcome)
                        continue
                await self._dispatch_event(event)
            else:
                return

    def _typed_batch(self, event: TypedNotifications) -> Awaitable[Any] | None:
        """A run of typed notifications handed to the method's batch handler at once (nothing queued ahead of
        it); returns what the handler returned when that must be awaited."""
        batch = event.handler.batch
        assert batch is not None
        try:
            outcome = batch(list(map(_PARAMS_OF, event.messages)))
        except Exception:
            _log.exception("batch notification handler for %r failed", event.method)
            return None
        return outcome if outcome is not None and inspect.isawaitable(outcome) else None

    async def _typed_one_by_one(self, event: TypedNotifications) -> int | None:
        """A run of typed notifications, one handler call per message (inline when it can run inline, else
        queued). Returns None when the run was dispatched, or the index in the block of the first frame left
        undispatched because a handler changed the typed methods (from there the block is classified again)."""
        messages = event.messages
        handler = event.handler
        # One at a time: per message, only a call of the handler when it can run inline.
        core = self._core
        typed = core.typed
        inline_fn = None if handler.is_async else handler.fn
        done = 0
        for message in messages:
            if core.typed is not typed:
                return event.end - len(messages) + done
            done += 1
            if inline_fn is None or self._backlog:
                await self._enqueue(_CALL, (event.method, handler, message.params))
                continue
            try:
                outcome = inline_fn(message.params)
            except Exception:
                _log.exception("notification handler for %r failed", event.method)
                continue
            if outcome is not None and inspect.isawaitable(outcome):
                await self._enqueue(_AWAIT, outcome)
        return None

    async def _pace(self, unyielded: int) -> int:
        """Between two reads: let woken tasks run when due, and wait while the outbox is over its high-water mark.
        Returns the count of frames read since the last yield."""
        if self._answered:
            # Let the callers just answered run before this task reads (and likely waits) again:
            # their wake-up is the round trip's critical path.
            self._answered = False
            unyielded = 0
            await self._yield_to_callers()
        elif unyielded >= FAIR_SHARE_FRAMES:
            # Many frames read without a pause: let the tasks they woke (a reader of chat events, a UI) run
            # before the next read, or an agent that writes without pause would have them wait, and their
            # queues grow, until it stops. One pass of the event loop per this many frames costs nothing
            # measurable.
            unyielded = 0
            await self._yield_to_callers()
        outbox = self._outbox
        if outbox.size > outbox.high_water:
            await outbox.wait_writable()
        return unyielded

    async def _reader_ended(self) -> None:
        """The peer's end (or the reader's cancellation): record why, and release everything waiting on it."""
        if self._closed_error is None:
            info = await self._frames.peer_exit()
            self._mark_closed(
                ConnectionClosed(
                    "the peer closed the connection", exit_code=info.exit_code, stderr_tail=info.stderr_tail
                )
            )
        for scope in list(self._scopes.values()):
            scope.cancel()  # nobody is left to answer
        self._start_waiting_cancelled()
        if self._notify_send is not None:
            self._notify_send.close()  # the consumer finishes what was already received

    async def _dispatch_event(self, event: Any) -> None:
        kind = type(event)
        if kind is NotificationReceived:
            await self._notification(event)
        elif kind is ResponseReceived:
            assert isinstance(event, ResponseReceived)
            if self._backlog and event.slot.has_done_callbacks:
                # The caller is woken now (a queued handler may be the one waiting for this answer), but the
                # answer's callbacks act in wire order: after the notifications still queued ahead of it.
                self._settle(event, callbacks=False)
                await self._enqueue(_SETTLE, event.slot)
            else:
                self._settle(event)
            self._answered = True
        elif kind is RequestReceived:
            assert isinstance(event, RequestReceived)
            await self._start_request(event)
        elif kind is CancelRequested:
            assert isinstance(event, CancelRequested)
            scope = self._scopes.get(event.id)
            if scope is not None:
                scope.cancel()
            else:
                self._withdraw_waiting(event.id)
        elif kind is ProtocolViolation:
            assert isinstance(event, ProtocolViolation)
            self._violation(event, event.frame)
        elif kind is FrameTooLarge:
            assert isinstance(event, FrameTooLarge)
            self._report(MessageTooLarge(event.size, self.max_frame_size))

    def _settle(self, event: ResponseReceived[PendingRequest[Any]], *, callbacks: bool = True) -> None:
        """Hand an answer to its waiting request (a malformed answer also gets its -32600 reply)."""
        if event.reply is not None:
            self._outbox.put(event.reply)
        event.slot._resolve(event.result, event.error, callbacks=callbacks)

    def _violation(self, event: ProtocolViolation, frame: bytes | None = None) -> None:
        if event.reply is not None:
            self._outbox.put(event.reply)
        parse = event.problem in ("malformed JSON", "invalid UTF-8", TOO_DEEP)
        self._report(ParseError(message=event.problem) if parse else InvalidRequest(message=event.problem), frame)

    def _report(self, error: AcpError, frame: bytes | None = None) -> None:
        """A bad frame: to ``on_frame_error``, else logged once per kind (then counted; see ``FrameErrorCallback``)."""
        self.bad_frames += 1
        if self.on_frame_error is not None:
            try:
                self.on_frame_error(error)
            except Exception:
                _log.exception("on_frame_error callback failed")
            return
        kind = type(error)
        if kind in self._reported_kinds:
            _log.debug("bad frame from %s: %s", self.peer_name, error)
            return
        self._reported_kinds.add(kind)
        what = "a line that is not JSON-RPC" if kind is ParseError else "a frame that breaks the protocol"
        line = "" if frame is None else f": {_excerpt(frame)}"
        _log.warning(
            "%s wrote %s (%s)%s; further ones of this kind are counted, not logged",
            self.peer_name,
            what,
            error,
            line,
        )

    # -- notifications ---------------------------------------------------------------------------------

    async def _notification(self, event: NotificationReceived) -> None:
        handler = self._notifications.get(event.method)
        if handler is None:
            fallback = self._fallback_notification
            if fallback is None:
                _log.debug("no handler for notification %r; dropped", event.method)
                return
            item: Any = (event.method, event.params)
        elif self._backlog == 0 and not handler.is_async:
            # Fast path: nothing queued ahead, so running it right here keeps arrival order.
            outcome = self._run_sync_notification(handler, event)
            if outcome is not None:
                await self._enqueue(_AWAIT, outcome)
            return
        else:
            item = handler
        await self._enqueue(item, event)

    def _run_sync_notification(self, handler: Handler, event: NotificationReceived) -> Awaitable[Any] | None:
        try:
            params = handler.decode_params(event.params)
        except DECODE_ERRORS as exc:
            self._report(invalid_params(exc))
            return None
        try:
            outcome = handler.fn(params)
        except Exception:
            _log.exception("notification handler for %r failed", event.method)
            return None
        return outcome if outcome is not None and inspect.isawaitable(outcome) else None

    async def _enqueue(self, item: Any, event: Any) -> None:
        assert self._notify_send is not None
        self._backlog += 1
        try:
            await self._notify_send.send((item, event))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._backlog -= 1

    async def _notification_consumer(self, receive: MemoryObjectReceiveStream[tuple[Any, Any]]) -> None:
        async with receive:
            async for item, event in receive:
                try:
                    if item is _AWAIT:
                        await event
                    elif item is _SETTLE:
                        event._run_done_callbacks()
                    elif item is _CALL:
                        method, handler, params = event
                        try:
                            outcome = handler.fn(params)
                        except Exception:
                            _log.exception("notification handler for %r failed", method)
                            continue
                        if outcome is not None and inspect.isawaitable(outcome):
                            await outcome
                    elif isinstance(item, Handler):
                        outcome = self._run_sync_notification(item, event)
                        if outcome is not None:
                            await outcome
                    else:  # fallback: (method, params)
                        assert self._fallback_notification is not None
                        method, params = item
                        outcome = self._fallback_notification(method, b"null" if params is None else bytes(params))
                        if inspect.isawaitable(outcome):
                            await outcome
                except Exception:
                    _log.exception("notification handler failed")
                finally:
                    self._backlog -= 1

    # -- incoming requests -----------------------------------------------------------------------------

    @property
    def requests_received(self) -> int:
        """How many requests the peer has sent that this side has read; each request's ``request_receipt()``
        is its place in that count (0 for the first), so upper layers can tell what came before what."""
        return self._requests_received

    @staticmethod
    def request_receipt() -> int | None:
        """Inside a request handler: the request's receipt number (see ``requests_received``); else None."""
        return _RECEIPT.get()

    def waiting_requests(self) -> list[tuple[str, msgspec.Raw | None]]:
        """``(method, params)`` of the requests read but waiting for a free slot (not started yet)."""
        return [(event.method, event.params) for event, _, _ in self._waiting]

    async def _start_request(self, event: RequestReceived) -> None:
        handler = self._requests.get(event.method)
        if handler is None and self._fallback_request is None:
            reply = self._core.error_frame(event.id, MethodNotFound(data={"method": event.method}))
            if reply is not None:
                self._outbox.put(reply)
            return
        receipt = self._requests_received
        self._requests_received += 1
        if handler is not None and handler.waits and self._parked < self._max_parked:
            self._parked += 1
            self._launch(event, handler, receipt, slot=False, parked=True)
            return
        if self._free_slots > 0:
            self._free_slots -= 1
            self._launch(event, handler, receipt, slot=True)
            return
        while len(self._waiting) >= self._waiting_limit:  # backpressure: stop reading until one finishes
            self._slot_freed = anyio.Event()
            await self._slot_freed.wait()
        self._waiting.append((event, handler, receipt))

    def _launch(
        self,
        event: RequestReceived,
        handler: Handler | None,
        receipt: int,
        *,
        slot: bool,
        cancelled: bool = False,
        parked: bool = False,
    ) -> None:
        scope = anyio.CancelScope()
        if cancelled:
            scope.cancel()  # withdrawn (or closing) before it started: the handler answers as for a withdrawal
        self._scopes[event.id] = scope
        assert self._tg is not None
        self._tg.start_soon(self._run_request, event, handler, scope, receipt, slot, parked)

    def _withdraw_waiting(self, id: RequestId) -> None:
        """``$/cancel_request`` for a request still waiting for a slot: start it at once, already cancelled."""
        for index, (event, handler, receipt) in enumerate(self._waiting):
            if event.id == id:
                del self._waiting[index]
                self._launch(event, handler, receipt, slot=False, cancelled=True)
                self._slot_freed.set()
                return

    def _start_waiting_cancelled(self) -> None:
        """Closing: every waiting request is started already cancelled, so it still gets its answer."""
        while self._waiting and self._tg is not None:
            event, handler, receipt = self._waiting.popleft()
            self._launch(event, handler, receipt, slot=False, cancelled=True)

    def _release_slot(self) -> None:
        if self._waiting:
            event, handler, receipt = self._waiting.popleft()
            self._launch(event, handler, receipt, slot=True)  # the slot passes on
            self._slot_freed.set()
        else:
            self._free_slots += 1

    async def _run_request(
        self,
        event: RequestReceived,
        handler: Handler | None,
        scope: anyio.CancelScope,
        receipt: int,
        slot: bool,
        parked: bool = False,
    ) -> None:
        _RECEIPT.set(receipt)
        ticket = AnswerTicket(self.answer_budget)
        CURRENT_ANSWER.set(ticket)
        core = self._core
        id = event.id
        reply: bytes | None = None
        try:
            with scope:
                reply = core.result_frame(id, await self._call_handler(event, handler))
        except RpcError as exc:
            reply = core.error_frame(id, exc)
        except Exception:
            _log.exception("handler for %r (request id %r) failed", event.method, id)
            reply = core.error_frame(id, InternalError())
        finally:
            self._scopes.pop(id, None)
            if slot:
                self._release_slot()
            if parked:
                self._parked -= 1
            if reply is None and core.is_in_flight(id):
                # Cancelled by the peer, by aclose() or because the peer went away: still answer (ACP2-001).
                reply = core.error_frame(id, RequestCancelled())
            if reply is not None:
                self._outbox.put(reply)
            if ticket.held or (reply is not None and len(reply) >= _TRACKED_ANSWER):
                # A large answer counts against the budget until the transport has taken it.
                ticket.resize(0 if reply is None else len(reply))
                outbox = self._outbox
                if outbox.written_total < outbox.queued_total:
                    with anyio.CancelScope(shield=True):
                        await outbox.wait_written(outbox.queued_total)
                ticket.release()

    async def _call_handler(self, event: RequestReceived, handler: Handler | None) -> Any:
        if handler is None:
            assert self._fallback_request is not None
            params_json = b"null" if event.params is None else bytes(event.params)
            outcome = self._fallback_request(event.method, params_json)
        else:
            if event.lossy and handler.lossless:
                raise InvalidParams(
                    message="a string in the params holds a lone UTF-16 surrogate escape (half of a character)",
                    data={"path": "$", "reason": "lone surrogate escape"},
                )
            try:
                params = handler.decode_params(event.params)
            except DECODE_ERRORS as exc:
                raise invalid_params(exc) from None
            outcome = handler.fn(params)
        if inspect.isawaitable(outcome):
            outcome = await outcome
        return outcome

    # -- closing ---------------------------------------------------------------------------------------

    def _mark_closed(self, error: ConnectionClosed) -> None:
        if self._closed_error is not None:
            return
        self._closed_error = error
        if self.on_frame_error is None and self.bad_frames > len(self._reported_kinds):
            _log.info("%s wrote %d bad frames in all", self.peer_name, self.bad_frames)
        for handle in self._core.close():
            handle._resolve(None, error)
        self._closed.set()


def _excerpt(frame: bytes, limit: int = 120) -> str:
    """The start of a bad line, quoted, for a log message."""
    text = bytes(frame[: limit * 4]).decode("utf-8", "replace").strip()
    return repr(text if len(text) <= limit else text[:limit] + "\u2026")


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
