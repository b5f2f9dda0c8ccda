"""The peer's requests to us, each in its own task: the concurrency slots, the bounded waiting queue, the
requests that only wait (parked, no slot), and every request answered exactly once, cancelled or not.

``Connection`` owns one; its reader hands each ``RequestReceived`` to ``start`` and each ``$/cancel_request`` to
``scopes`` / ``withdraw_waiting``.
"""

from __future__ import annotations

import inspect
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

import anyio
import msgspec
from anyio.abc import TaskGroup

from ..errors import InternalError, InvalidParams, MethodNotFound, RequestCancelled, RpcError
from .budget import CURRENT_ANSWER, AnswerBudget, AnswerTicket
from .core import RequestReceived, RpcCore
from .handlers import DECODE_ERRORS, Handler, invalid_params
from .messages import RequestId
from .outbox import Outbox
from .pending import PendingRequest

__all__ = ["RECEIPT", "IncomingRequestHook", "IncomingRequests"]

_log = logging.getLogger("acp_session.rpc")
RECEIPT: ContextVar[int | None] = ContextVar("acp_session_request_receipt", default=None)
"""Inside a request handler: the request's receipt number (``Connection.request_receipt``)."""
_TRACKED_ANSWER = 64 * 1024  # an answer frame at least this large counts against the budget until written

IncomingRequestHook = Callable[[str, msgspec.Raw | None, Awaitable[Any]], Awaitable[Any]]
"""``(method, params, handling) -> awaitable``: wraps the handling of one incoming request (decoding its params
and running its handler). The awaitable it returns must await ``handling`` and give back its result or raise
its exception unchanged: the answer is made from that, as without the hook."""


class IncomingRequests:
    """At most ``max_concurrent`` requests run; more wait in a bounded queue (the reader keeps reading, so a
    ``$/cancel_request`` for a waiting one is seen at once); past that bound the reader waits."""

    def __init__(
        self,
        core: RpcCore[PendingRequest[Any]],
        outbox: Outbox,
        handlers: dict[str, Handler],
        answer_budget: AnswerBudget,
        max_concurrent: int,
        max_parked: int,
    ) -> None:
        self._core = core
        self._outbox = outbox
        self._handlers = handlers
        self._answer_budget = answer_budget
        self.fallback: Any = None
        """The fallback handler for methods with none (``Connection.set_fallback_request_handler``)."""
        self._free_slots = max_concurrent
        self.waiting: deque[tuple[RequestReceived, Handler | None, int]] = deque()
        self._waiting_limit = 4 * max_concurrent
        self._parked = 0  # requests of a waiting kind running without a slot
        self.max_parked = max_parked
        self._slot_freed = anyio.Event()
        self.received = 0
        """How many requests were read (each one's receipt number is its place in this count)."""
        self.scopes: dict[RequestId, anyio.CancelScope] = {}
        """The cancel scope of each running request, by id."""
        self.tg: TaskGroup | None = None
        """The connection's task group, set when it is entered."""
        self.hook: IncomingRequestHook | None = None
        """Around each request's handling (``Connection.incoming_request_hook``); None: off."""

    async def start(self, event: RequestReceived) -> None:
        handler = self._handlers.get(event.method)
        if handler is None and self.fallback is None:
            reply = self._core.error_frame(event.id, MethodNotFound(data={"method": event.method}))
            if reply is not None:
                self._outbox.put(reply)
            return
        receipt = self.received
        self.received += 1
        if handler is not None and handler.inline:
            self._answer_inline(event, handler, receipt)
            return
        if handler is not None and handler.waits and self._parked < self.max_parked:
            self._parked += 1
            self._launch(event, handler, receipt, slot=False, parked=True)
            return
        if self._free_slots > 0:
            self._free_slots -= 1
            self._launch(event, handler, receipt, slot=True)
            return
        while len(self.waiting) >= self._waiting_limit:  # backpressure: stop reading until one finishes
            self._slot_freed = anyio.Event()
            await self._slot_freed.wait()
        self.waiting.append((event, handler, receipt))

    def _answer_inline(self, event: RequestReceived, handler: Handler, receipt: int) -> None:
        """Run a sync handler here, in the reader, and queue its answer: nothing after the request is read (or
        dispatched) before it has run (``on_request(inline=True)``)."""
        token = RECEIPT.set(receipt)
        try:
            reply = self._core.result_frame(event.id, self._call_sync(event, handler))
        except RpcError as exc:
            reply = self._core.error_frame(event.id, exc)
        except Exception:
            _log.exception("handler for %r (request id %r) failed", event.method, event.id)
            reply = self._core.error_frame(event.id, InternalError())
        finally:
            RECEIPT.reset(token)
        if reply is not None:
            self._outbox.put(reply)

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
        self.scopes[event.id] = scope
        assert self.tg is not None
        self.tg.start_soon(self._run_request, event, handler, scope, receipt, slot, parked)

    def withdraw_waiting(self, id: RequestId) -> None:
        """``$/cancel_request`` for a request still waiting for a slot: start it at once, already cancelled."""
        for index, (event, handler, receipt) in enumerate(self.waiting):
            if event.id == id:
                del self.waiting[index]
                self._launch(event, handler, receipt, slot=False, cancelled=True)
                self._slot_freed.set()
                return

    def start_waiting_cancelled(self) -> None:
        """Closing: every waiting request is started already cancelled, so it still gets its answer."""
        while self.waiting and self.tg is not None:
            event, handler, receipt = self.waiting.popleft()
            self._launch(event, handler, receipt, slot=False, cancelled=True)

    def _release_slot(self) -> None:
        if self.waiting:
            event, handler, receipt = self.waiting.popleft()
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
        RECEIPT.set(receipt)
        ticket = AnswerTicket(self._answer_budget)
        CURRENT_ANSWER.set(ticket)
        core = self._core
        id = event.id
        reply: bytes | None = None
        try:
            with scope:
                hook = self.hook
                if hook is None:
                    result = await self._call_handler(event, handler)
                else:
                    result = await hook(event.method, event.params, self._call_handler(event, handler))
                reply = core.result_frame(id, result)
        except RpcError as exc:
            reply = core.error_frame(id, exc)
        except Exception:
            kind = f"failures of the {event.method} request handler"  # a registered method: few kinds
            core.log.exception(kind, "handler for %r (request id %r) failed", event.method, id)
            reply = core.error_frame(id, InternalError())
        finally:
            self.scopes.pop(id, None)
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
            assert self.fallback is not None
            params_json = b"null" if event.params is None else bytes(event.params)
            outcome = self.fallback(event.method, params_json)
        else:
            outcome = self._call_sync(event, handler)
        if inspect.isawaitable(outcome):
            outcome = await outcome
        return outcome

    @staticmethod
    def _call_sync(event: RequestReceived, handler: Handler) -> Any:
        """Decode the params and call the handler (what it returns may still have to be awaited)."""
        if event.lossy and handler.lossless:
            raise InvalidParams(
                message="a string in the params holds a lone UTF-16 surrogate escape (half of a character)",
                data={"path": "$", "reason": "lone surrogate escape"},
            )
        try:
            params = handler.decode_params(event.params)
        except DECODE_ERRORS as exc:
            raise invalid_params(exc) from None
        return handler.fn(params)
