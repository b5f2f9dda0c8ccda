"""The read side of ``Connection`` (a base class of it, kept apart for size): the reader task, which moves frames
into ``RpcCore.receive_block`` and dispatches what it classifies (responses settled in the reader, requests
started, notifications handled in order: inline, or through the queue to one consumer task), and the record of
why the connection closed.

Every attribute it reads is set by ``Connection.__init__``; the annotations below name them for the type checker.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from operator import attrgetter
from typing import Any

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .._counted_log import CountedLog
from ..errors import AcpError, ConnectionClosed, InvalidRequest, MessageTooLarge, ParseError
from ..transport.base import FrameTransport
from ..transport.framing import Frame, expand_blocks, lines_in
from ..transport.lines import STREAM_END
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
from .handlers import DECODE_ERRORS, Handler, invalid_params
from .incoming import IncomingRequests
from .messages import RequestId
from .outbox import Outbox
from .pending import PendingRequest

__all__ = ["FAIR_SHARE_FRAMES", "FrameErrorCallback", "ReadSide"]

_log = logging.getLogger("acp_session.rpc")

FrameErrorCallback = Callable[[AcpError], None]
"""Told about frames that broke the rules: ``MessageTooLarge``, ``ParseError``, ``InvalidRequest``, ...

Without one, the first bad frame of each kind is logged as a warning naming the peer and quoting the start
of the line; later ones are only counted (``Connection.bad_frames``, ``Connection.peer_log``)."""

_AWAIT = object()  # queue marker: the item is an awaitable left by a sync handler; finish it in order
FAIR_SHARE_FRAMES = 1024
"""After this many frames read without a pause, the reader lets the event loop run once before reading on."""

_CALL = object()  # queue marker: the item is (method, handler, params already decoded by the fast path)
_SETTLE = object()  # queue marker: the item is an answered request whose done callbacks must follow the queued items
_PARAMS_OF = attrgetter("params")


class ReadSide:
    """The reader of a ``Connection`` and what it dispatches to."""

    transport: Any
    bad_frames: int
    frames_read: int
    max_frame_size: int
    on_frame_error: FrameErrorCallback | None
    peer_name: str
    _answered: bool
    _backlog: int
    _closed: anyio.Event
    _closed_error: ConnectionClosed | None
    _core: RpcCore[PendingRequest[Any]]
    _fallback_notification: Callable[[str, bytes], Any] | None
    _frames: FrameTransport
    _incoming: IncomingRequests
    _notifications: dict[str, Handler]
    _notify_send: MemoryObjectSendStream[tuple[Any, Any]] | None
    _outbox: Outbox
    peer_log: CountedLog
    _scopes: dict[RequestId, anyio.CancelScope]
    _yield_to_callers: Callable[[], Awaitable[None]]

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
                read = lines_in(frames)
                unyielded += read
                self.frames_read += read
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
                        frames = expand_blocks(frames)[rest:]
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
            self._handler_failed(event.method, "batch notification handler for %r failed")
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
                self._handler_failed(event.method)
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
                    info.reason or "the peer closed the connection",
                    exit_code=info.exit_code,
                    stderr_tail=info.stderr_tail,
                )
            )
        for scope in list(self._scopes.values()):
            scope.cancel()  # nobody is left to answer
        self._incoming.start_waiting_cancelled()
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
            await self._incoming.start(event)
        elif kind is CancelRequested:
            assert isinstance(event, CancelRequested)
            scope = self._scopes.get(event.id)
            if scope is not None:
                scope.cancel()
            else:
                self._incoming.withdraw_waiting(event.id)
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

    def _handler_failed(self, method: str, msg: str = "notification handler for %r failed") -> None:
        """A notification handler raised: the traceback of the first failure of each method's handler is logged,
        later ones are counted (a peer repeating what makes it fail writes no more lines)."""
        self.peer_log.exception(f"failures of the {method} notification handler", msg, method)

    def _report(self, error: AcpError, frame: bytes | None = None) -> None:
        """A bad frame: to ``on_frame_error``, else logged once per kind (then counted; see ``FrameErrorCallback``)."""
        self.bad_frames += 1
        if self.on_frame_error is not None:
            try:
                self.on_frame_error(error)
            except Exception:
                self.peer_log.exception("failures of the on_frame_error callback", "on_frame_error callback failed")
            return
        kind = type(error)
        what = "a line that is not JSON-RPC" if kind is ParseError else "a frame that breaks the protocol"
        counted = f"bad frames ({kind.__name__})"
        line = "" if frame is None or counted in self.peer_log.counts else f": {_excerpt(frame)}"
        self.peer_log.warning(counted, "%s wrote %s (%s)%s", self.peer_name, what, error, line)

    # -- notifications ---------------------------------------------------------------------------------

    async def _notification(self, event: NotificationReceived) -> None:
        handler = self._notifications.get(event.method)
        if handler is None:
            fallback = self._fallback_notification
            if fallback is None:
                self.peer_log.debug(
                    "notifications without a handler", "no handler for notification %r; dropped", event.method
                )
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
            self._handler_failed(event.method)
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
                            self._handler_failed(method)
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
                    self.peer_log.exception("failures of awaited notification handlers", "notification handler failed")
                finally:
                    self._backlog -= 1

    def _mark_closed(self, error: ConnectionClosed) -> None:
        if self._closed_error is not None:
            return
        self._closed_error = error
        self.peer_log.close()
        for handle in self._core.close():
            handle._resolve(None, error)
        self._closed.set()


def _excerpt(frame: bytes, limit: int = 120) -> str:
    """The start of a bad line, quoted, for a log message."""
    text = bytes(frame[: limit * 4]).decode("utf-8", "replace").strip()
    return repr(text if len(text) <= limit else text[:limit] + "\u2026")
