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


class Flag(Protocol):
    def set(self) -> None: ...

    def is_set(self) -> bool: ...

    def wait(self) -> Awaitable[Any]: ...


class AsyncioFlag:
    """Set once; ``wait`` returns when set (at once if it already is). Bound to one running loop."""

    __slots__ = ("_is_set", "_loop", "_waiters")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._is_set = False
        self._waiters: list[asyncio.Future[None]] = []

    def is_set(self) -> bool:
        return self._is_set

    def set(self) -> None:
        if self._is_set:
            return
        self._is_set = True
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)

    def wait(self) -> Awaitable[None]:
        """A future to await (no coroutine of its own: this is on every request's path)."""
        waiter: asyncio.Future[None] = self._loop.create_future()
        if self._is_set:
            waiter.set_result(None)
            return waiter
        waiters = self._waiters
        if len(waiters) > 8:  # waits that were cancelled leave done futures behind
            waiters[:] = [w for w in waiters if not w.done()]
        waiters.append(waiter)
        return waiter


def flag_factory() -> Callable[[], Flag]:
    """The cheapest flag for the running backend (call from inside the event loop)."""
    loop = running_asyncio_loop()
    if loop is not None:
        return partial(AsyncioFlag, loop)
    return type(anyio.Event())
