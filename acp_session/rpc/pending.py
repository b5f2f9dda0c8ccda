"""The handle for one outgoing request: awaitable for its result, cancellable, optionally timed."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Generator
from typing import Any, Generic, Protocol, TypeVar

import anyio
import msgspec

from ..errors import AcpError, InvalidResponse, RequestTimeout
from ..transport.backend import Flag, Waiter
from .handlers import RESULT_DECODERS, result_decoders
from .messages import RequestId

__all__ = ["PendingRequest", "RequestLink"]

_log = logging.getLogger("acp_session.rpc")

T = TypeVar("T")


class RequestLink(Protocol):
    """All a ``PendingRequest`` asks of the connection that sent it (``Connection`` makes one per connection).

    The other way round, the connection settles a request with ``_resolve``, ``_timed_out`` and
    ``_run_done_callbacks`` (the handle's side of this pairing, private to the rpc layer).
    """

    new_waiter: Callable[[], Waiter] | None
    """A bare future for the first waiter (asyncio), or None: every waiter waits on a flag."""
    new_flag: Callable[[], Flag]
    """A set-once flag for the running backend."""

    def before_wait(self, handle: PendingRequest[Any], /) -> Awaitable[None] | None:
        """Called when a caller is about to wait for ``handle``'s answer: write what is queued (the request
        itself, usually) and poll briefly for a quick answer. Returns what to await first, if anything."""
        ...

    def send_cancel(self, id: RequestId, /) -> None:
        """Queue ``$/cancel_request`` for ``id`` (nothing if it is no longer pending or the connection closed)."""
        ...

    def expire(self, handle: PendingRequest[Any], /) -> None:
        """The time limit passed: cancel at the peer, forget the id, fail the waiters (``_timed_out``)."""
        ...


class PendingRequest(Generic[T]):
    """A request that has been queued for sending.

    ``await handle`` (or ``await handle.result()``) gives the decoded result or raises the peer's
    ``RpcError``, ``ConnectionClosed``, ``RequestTimeout`` or ``InvalidResponse``; it may be awaited again.
    ``cancel()`` sends ``$/cancel_request`` once and keeps waiting for the peer's real answer (ACP2-001).

    A time limit (``Connection.request(..., timeout=)`` or ``set_timeout``) applies while the request is
    awaited: when it passes, ``$/cancel_request`` is sent, the id is forgotten (a late answer is dropped),
    the ``on_expire`` function runs and every waiter gets ``RequestTimeout``.
    """

    # Creating, sending, answering and awaiting one of these is the round trip's hot path. On asyncio the
    # first caller to wait gets a bare future of its own (``_waiter``; no Python-level flag object at all);
    # anyone else waiting at the same time, and every waiter on other backends, shares ``_flag``. A waiter
    # cancelled on its own future never disturbs another.
    __slots__ = (
        "_cancel_sent",
        "_deadline",
        "_decode",
        "_error",
        "_finished",
        "_flag",
        "_link",
        "_on_done",
        "_on_expire",  # set only by on_expire(): read with getattr, so creating a request costs nothing more
        "_raw",
        "_waiter",
        "id",
        "method",
    )

    def __init__(
        self, link: RequestLink, id: RequestId, method: str, decode: Callable[[bytes], T], timeout: float | None
    ) -> None:
        self.id = id
        self.method = method
        self._link = link
        self._decode = decode
        self._deadline = None if timeout is None else anyio.current_time() + timeout
        self._finished = False
        self._flag: Flag | None = None
        self._waiter: Waiter | None = None
        self._raw: Any = None
        self._error: AcpError | None = None
        self._cancel_sent = False
        self._on_done: list[Callable[[PendingRequest[T]], None]] | None = None

    def __repr__(self) -> str:
        state = "done" if self._finished else "pending"
        return f"<PendingRequest {self.method!r} id={self.id!r} {state}>"

    @property
    def done(self) -> bool:
        """True once an answer (or a failure) is in."""
        return self._finished

    @property
    def has_done_callbacks(self) -> bool:
        return self._on_done is not None

    @property
    def cancel_sent(self) -> bool:
        return self._cancel_sent

    def add_done_callback(self, fn: Callable[[PendingRequest[T]], None]) -> None:
        """Call ``fn(self)`` as soon as the answer (or a failure) is in, in the reader, in wire order.

        Callbacks run in the order they were added, before any awaiting task resumes, so a protocol
        layer can act on an answer exactly where it sits among the notifications around it. They
        must be quick and must not raise (an exception is logged and dropped). Added after the
        answer, ``fn`` runs at once.
        """
        if self._finished:
            _run_callback(fn, self)
        elif self._on_done is None:
            self._on_done = [fn]
        else:
            self._on_done.append(fn)

    def outcome(self) -> T:
        """The decoded result of a finished request, or its error raised (``done`` must be true)."""
        if not self._finished:
            raise RuntimeError(f"{self.method!r} (id {self.id!r}) has no answer yet")
        return self._outcome()

    def set_timeout(self, timeout: float | None) -> None:
        """Give up ``timeout`` seconds from now (None: no limit) for every await that starts after this call
        (an await already under way keeps its own limit)."""
        self._deadline = None if timeout is None else anyio.current_time() + timeout

    def on_expire(self, fn: Callable[[PendingRequest[T]], None] | None) -> None:
        """Call ``fn(self)`` if the time limit passes, after ``$/cancel_request`` was queued and before the
        waiters get ``RequestTimeout`` (e.g. to send a protocol-level cancel too). It must be quick."""
        self._on_expire = fn

    @property
    def timed_out(self) -> bool:
        """True if the time limit passed before an answer came."""
        return isinstance(self._error, RequestTimeout)

    def cancel(self) -> None:
        """Ask the peer to cancel (``$/cancel_request``); no-op if answered or already asked."""
        if self._cancel_sent or self._finished:
            return
        self._cancel_sent = True
        self._link.send_cancel(self.id)

    async def result(self) -> T:
        return await self

    def __await__(self) -> Generator[Any, None, T]:
        # A generator rather than a coroutine: one frame fewer on every resumption.
        if not self._finished:
            link = self._link
            first = link.before_wait(self)  # writes our request, polls briefly for a quick answer
            if first is not None:
                yield from first.__await__()
            if self._finished:
                pass
            elif self._deadline is None:
                new_waiter = link.new_waiter
                waiter = self._waiter
                if new_waiter is not None and (waiter is None or waiter.done()):  # a done one was cancelled
                    waiter = self._waiter = new_waiter()
                    yield from waiter
                else:
                    flag = self._flag
                    if flag is None:
                        flag = self._flag = link.new_flag()
                    if not self._finished:
                        yield from flag.wait().__await__()
            else:
                yield from self._wait_until_deadline().__await__()
        return self._outcome()

    async def _wait_until_deadline(self) -> None:
        assert self._deadline is not None
        if self._flag is None:
            self._flag = self._link.new_flag()
        with anyio.move_on_after(self._deadline - anyio.current_time()):
            await self._flag.wait()
        if not self._finished:
            self._link.expire(self)

    def _outcome(self) -> T:
        if self._error is not None:
            raise self._error
        raw = self._raw
        decode = self._decode
        if decode is _DECODED:  # a done callback (the session's option list, a span) read it first
            return raw  # type: ignore[no-any-return]
        try:
            try:  # a TypedDecoder's strict first pass (codec.decoder), and whether a buffer will do
                strict, buffer_ok = RESULT_DECODERS[decode]
            except (KeyError, TypeError):
                strict, buffer_ok = result_decoders(decode)
            value: T | None = None
            if strict is not None:
                try:  # noqa: SIM105 - a try costs nothing in 3.11; suppress() is a context manager per call
                    value = strict(raw)
                except msgspec.ValidationError:
                    pass  # the lenient rules of ``decode`` itself may still accept it
            if value is None:
                value = decode(raw if buffer_ok else bytes(raw))
        except (msgspec.DecodeError, RecursionError) as exc:
            raise InvalidResponse(f"result of {self.method!r} (id {self.id!r}) did not decode: {exc}") from exc
        # Kept decoded: the done callbacks and the caller each read the outcome, and decoding an answer twice
        # cost about a microsecond of every ``set_config_option`` round trip.
        self._raw = value
        self._decode = _DECODED
        return value

    def _resolve(self, raw: Any, error: AcpError | None, *, callbacks: bool = True) -> None:
        """Record the answer and wake the waiters; run the done callbacks too unless ``callbacks`` is False
        (the connection then runs them later with ``_run_done_callbacks``, in wire order)."""
        if self._finished:
            return
        self._finished = True
        self._raw = raw
        self._error = error
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        if self._flag is not None:
            self._flag.set()
        if callbacks:
            self._run_done_callbacks()

    def _run_done_callbacks(self) -> None:
        callbacks = self._on_done
        if callbacks is not None:
            self._on_done = None
            for fn in callbacks:
                _run_callback(fn, self)

    def _timed_out(self) -> None:
        expired = getattr(self, "_on_expire", None)
        if expired is not None:
            _run_callback(expired, self)
        self._resolve(None, RequestTimeout(f"no answer to {self.method!r} (id {self.id!r}) in time"))


def _decoded(raw: bytes) -> Any:
    raise AssertionError("never called: marks a result decoded already")


_DECODED: Callable[[bytes], Any] = _decoded
"""``PendingRequest._decode`` once the answer was decoded: ``_raw`` then holds the decoded value."""


def _run_callback(fn: Callable[[PendingRequest[Any]], None], handle: PendingRequest[Any]) -> None:
    try:
        fn(handle)
    except Exception:
        _log.exception("a done callback of %r failed", handle)
