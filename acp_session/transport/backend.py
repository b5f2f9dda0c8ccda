"""The I/O backend seam: everything specific to asyncio or trio lives here, and only here.

The library runs on anyio, so on either backend. Most of it needs nothing more, but the round trip's hot path
does better on asyncio with a few things anyio does not offer: a bare future to wait on, a pass of the loop
without a cancel scope, ``call_soon``, readiness callbacks on a file descriptor, and a look at the loop's queue
of ready callbacks (to stop busy polling as soon as something else could run). ``current_backend()`` returns
one object that holds all of these for the running event loop; the rest of the library asks it once (a
``Connection`` when it starts, a pipe reader on its first wait), binds the callables it needs into attributes,
and never imports ``asyncio`` itself. Everything is optional: ``None`` (or ``readiness_callbacks`` false) means
"use anyio's own primitive", which is what trio, and any event loop this module does not know, gets.

Like httpcore's ``_backends``, this is the one place to change for another backend.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Generator, Sized
from functools import partial
from typing import Any, Protocol

import anyio
import anyio.lowlevel

__all__ = [
    "AsyncioBackend",
    "AsyncioFlag",
    "Backend",
    "Flag",
    "Waiter",
    "current_backend",
    "running_asyncio_loop",
]


class Flag(Protocol):
    """A set-once flag that tasks can wait for (``anyio.Event``, or ``AsyncioFlag``)."""

    def set(self) -> None: ...

    def is_set(self) -> bool: ...

    def wait(self) -> Awaitable[Any]: ...


class Waiter(Protocol):
    """A one-shot future a single task awaits and someone else completes (an ``asyncio.Future``)."""

    def done(self) -> bool: ...

    def set_result(self, result: None, /) -> None: ...

    def set_exception(self, exception: BaseException, /) -> None: ...

    def __await__(self) -> Generator[Any, None, Any]: ...

    def __iter__(self) -> Generator[Any, None, Any]: ...


class Backend:
    """What the running event loop offers beyond anyio; this base class is the generic answer (trio).

    Attributes are plain values and bound callables, meant to be copied into the caller's own attributes once.
    """

    __slots__ = (
        "call_soon",
        "name",
        "new_flag",
        "new_waiter",
        "readiness_callbacks",
        "ready_queue",
        "yield_to_callers",
    )

    def __init__(self, new_flag: Callable[[], Flag] | None = None) -> None:
        self.name = "anyio"
        self.new_flag: Callable[[], Flag] = new_flag or type(anyio.Event())
        """The cheapest set-once flag (``anyio.Event()`` looks the backend up on every call; its class does not)."""
        self.new_waiter: Callable[[], Waiter] | None = None
        """A bare future for one waiter, cheaper than a flag; None: wait on a flag."""
        self.yield_to_callers: Callable[[], Awaitable[None]] = anyio.lowlevel.cancel_shielded_checkpoint
        """One pass of the event loop, so that tasks just woken run before the caller goes on."""
        self.call_soon: Callable[[Callable[[], None]], object] | None = None
        """Run a callback once the callbacks ready now have run; None when the loop cannot."""
        self.ready_queue: Sized | None = None
        """The loop's queue of callbacks ready to run (empty: nothing else wants the CPU); None if unknown."""
        self.readiness_callbacks = False
        """Whether ``add_reader``/``remove_reader`` work (else use ``anyio.wait_readable``)."""

    def add_reader(self, fd: int, callback: Callable[[], None]) -> None:
        """Call ``callback()`` from the loop whenever ``fd`` is readable, until ``remove_reader(fd)``."""
        raise NotImplementedError(f"the {self.name} backend has no readiness callbacks")

    def remove_reader(self, fd: int) -> None:
        raise NotImplementedError(f"the {self.name} backend has no readiness callbacks")


class AsyncioBackend(Backend):
    """anyio's asyncio backend: the lean primitives of one running loop."""

    __slots__ = ("_loop",)

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(partial(AsyncioFlag, loop))  # the lean flag of this loop; no anyio lookup
        self.name = "asyncio"
        self._loop = loop
        # Called directly: ``loop.create_future()`` is one Python frame more.
        self.new_waiter = partial(asyncio.Future, loop=loop)
        self.yield_to_callers = _asyncio_yield
        self.call_soon = loop.call_soon
        # Private to asyncio, so looked up with care: a loop without it simply never busy-polls.
        ready = getattr(loop, "_ready", None)
        self.ready_queue = ready if isinstance(ready, Sized) else None
        self.readiness_callbacks = True

    def add_reader(self, fd: int, callback: Callable[[], None]) -> None:
        self._loop.add_reader(fd, callback)

    def remove_reader(self, fd: int) -> None:
        self._loop.remove_reader(fd)


def running_asyncio_loop() -> asyncio.AbstractEventLoop | None:
    """The running asyncio loop when this task runs on one (anyio's asyncio backend); None under trio."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    return loop if asyncio.current_task() is not None else None


_last_backend: tuple[object, Backend] | None = None
"""The backend ``current_backend`` gave last, with the loop it was made for (an asyncio loop, or a trio run's
token): a reader of a turn asks once per turn, and building one looks the backend up in anyio."""


def current_backend() -> Backend:
    """The backend of the running event loop (call from inside it); the same object while the loop is the same.

    A backend holds no state of its own (only the loop's primitives), so sharing it is safe. The cache holds
    the last loop strongly until another loop asks, which keeps at most one finished loop alive.
    """
    global _last_backend
    loop = running_asyncio_loop()
    last = _last_backend
    if loop is not None:
        if last is not None and last[0] is loop:
            return last[1]
        backend: Backend = AsyncioBackend(loop)
        _last_backend = (loop, backend)
        return backend
    token = _trio_token()  # trio: one token per run; another anyio backend is not cached
    if token is not None and last is not None and last[0] is token:
        return last[1]
    backend = Backend()
    if token is not None:
        _last_backend = (token, backend)
    return backend


def _trio_token() -> object | None:
    """The running trio loop's token (None when trio is not what runs): what a trio backend is cached under."""
    trio = sys.modules.get("trio")
    if trio is None:
        return None
    try:
        return trio.lowlevel.current_trio_token()  # type: ignore[no-any-return]
    except RuntimeError:
        return None


async def _asyncio_yield() -> None:
    """One pass of the asyncio loop (anyio's shielded checkpoint costs a cancel scope on asyncio)."""
    await asyncio.sleep(0)


class AsyncioFlag:
    """Set once; ``wait`` returns when set (at once if it already is). Bound to one running loop.

    ``anyio.Event`` wraps an ``asyncio.Event``, which checks its loop on each wait; this keeps only what a
    request needs, a round trip being mostly such small costs. Each wait gets a future of its own, so a
    cancelled waiter never cancels another. The first is kept in a slot: a request nearly always has exactly
    one waiter.
    """

    __slots__ = ("_is_set", "_loop", "_more", "_waiter")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._is_set = False
        self._waiter: asyncio.Future[None] | None = None
        self._more: list[asyncio.Future[None]] | None = None

    def is_set(self) -> bool:
        return self._is_set

    def set(self) -> None:
        if self._is_set:
            return
        self._is_set = True
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
        if self._more is not None:
            for waiter in self._more:
                if not waiter.done():
                    waiter.set_result(None)

    def wait(self) -> Awaitable[None]:
        """A future to await (no coroutine of its own: this is on every request's path)."""
        waiter: asyncio.Future[None] = asyncio.Future(loop=self._loop)
        if self._is_set:
            waiter.set_result(None)
        elif self._waiter is None or self._waiter.done():  # a done one was cancelled: its slot is free
            self._waiter = waiter
        else:
            more = self._more
            if more is None:
                self._more = [waiter]
            else:
                if len(more) > 8:  # waits that were cancelled leave done futures behind
                    more[:] = [w for w in more if not w.done()]
                more.append(waiter)
        return waiter
