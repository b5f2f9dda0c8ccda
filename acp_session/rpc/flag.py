"""A set-once flag that tasks can wait for: ``anyio.Event``, or on asyncio a leaner equivalent.

Every request waits on one. On asyncio, ``anyio.Event`` wraps an ``asyncio.Event``, which checks its loop on
each wait; ``AsyncioFlag`` keeps only what a request needs, a round trip being mostly such small costs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, Protocol

import anyio

from ..transport.pipe import running_asyncio_loop

__all__ = ["AsyncioFlag", "Flag", "flag_factory"]

_Future = asyncio.Future  # called directly: ``loop.create_future()`` is one Python frame more


class Flag(Protocol):
    def set(self) -> None: ...

    def is_set(self) -> bool: ...

    def wait(self) -> Awaitable[Any]: ...


class AsyncioFlag:
    """Set once; ``wait`` returns when set (at once if it already is). Bound to one running loop.

    Each wait gets a future of its own, so a cancelled waiter never cancels another. The first is kept in a
    slot: a request nearly always has exactly one waiter.
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
        waiter: asyncio.Future[None] = _Future(loop=self._loop)
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


def flag_factory() -> Callable[[], Flag]:
    """The cheapest flag for the running backend (call from inside the event loop)."""
    loop = running_asyncio_loop()
    if loop is not None:
        return partial(AsyncioFlag, loop)
    return type(anyio.Event())
