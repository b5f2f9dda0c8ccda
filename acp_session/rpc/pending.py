"""The handle for one outgoing request: awaitable for its result, cancellable, optionally timed."""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import anyio
import msgspec

from ..errors import AcpError, InvalidResponse, RequestTimeout
from .handlers import accepts_buffer
from .messages import RequestId

if TYPE_CHECKING:
    from .connection import Connection

__all__ = ["PendingRequest"]

T = TypeVar("T")


class PendingRequest(Generic[T]):
    """A request that has been queued for sending.

    ``await handle`` (or ``await handle.result()``) gives the decoded result or raises the peer's
    ``RpcError``, ``ConnectionClosed``, ``RequestTimeout`` or ``InvalidResponse``; it may be awaited again.
    ``cancel()`` sends ``$/cancel_request`` once and keeps waiting for the peer's real answer (ACP2-001).
    """

    __slots__ = ("_cancel_sent", "_conn", "_deadline", "_decode", "_done", "_error", "_raw", "_raw_ok", "id", "method")

    def __init__(self, conn: Connection, method: str, decode: Callable[[bytes], T], timeout: float | None) -> None:
        self.id: RequestId = -1  # set by Connection.request once the core allocated it
        self.method = method
        self._conn = conn
        self._decode = decode
        self._raw_ok = accepts_buffer(decode)
        self._deadline = None if timeout is None else anyio.current_time() + timeout
        self._done = conn._new_event()
        self._raw: Any = None
        self._error: AcpError | None = None
        self._cancel_sent = False

    def __repr__(self) -> str:
        state = "done" if self._done.is_set() else "pending"
        return f"<PendingRequest {self.method!r} id={self.id!r} {state}>"

    @property
    def done(self) -> bool:
        """True once an answer (or a failure) is in."""
        return self._done.is_set()

    @property
    def cancel_sent(self) -> bool:
        return self._cancel_sent

    def cancel(self) -> None:
        """Ask the peer to cancel (``$/cancel_request``); no-op if answered or already asked."""
        if self._cancel_sent or self._done.is_set():
            return
        self._cancel_sent = True
        self._conn._send_cancel(self.id)

    async def result(self) -> T:
        return await self

    def __await__(self) -> Generator[Any, None, T]:
        # A generator rather than a coroutine: awaiting a request is the round trip's hot path.
        if not self._done.is_set():
            if self._conn._outbox.size:
                yield from self._conn._flush().__await__()  # write our request rather than wait for the writer
            if self._deadline is None:
                yield from self._done.wait().__await__()
            else:
                yield from self._wait_until_deadline().__await__()
        return self._outcome()

    async def _wait_until_deadline(self) -> None:
        assert self._deadline is not None
        with anyio.move_on_after(self._deadline - anyio.current_time()):
            await self._done.wait()
        if not self._done.is_set():
            self._conn._expire(self)

    def _outcome(self) -> T:
        if self._error is not None:
            raise self._error
        raw = self._raw
        try:
            return self._decode(raw if self._raw_ok else bytes(raw))
        except (msgspec.DecodeError, RecursionError) as exc:
            raise InvalidResponse(f"result of {self.method!r} (id {self.id!r}) did not decode: {exc}") from exc

    def _resolve(self, raw: Any, error: AcpError | None) -> None:
        if self._done.is_set():
            return
        self._raw = raw
        self._error = error
        self._done.set()

    def _timed_out(self) -> None:
        self._resolve(None, RequestTimeout(f"no answer to {self.method!r} (id {self.id!r}) in time"))
