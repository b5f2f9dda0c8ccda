"""A set-once flag that tasks can wait for: ``anyio.Event``, or on asyncio a leaner equivalent.

Every request waits on one. On asyncio, ``anyio.Event`` wraps an ``asyncio.Event``, which checks its loop on
each wait; ``AsyncioFlag`` keeps only what a request needs, a round trip being mostly such small costs.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import partial
from typing import Protocol

import anyio

from ..transport.pipe import running_asyncio_loop

__all__ = ["AsyncioFlag", "Flag", "flag_factory"]


class Flag(Protocol):
    def set(self) -> None: ...

    def is_set(self) -> bool: ...

    async def wait(self) -> None: ...


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

    async def wait(self) -> None:
        if self._is_set:
            return
        waiter = self._loop.create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        finally:
            self._waiters.remove(waiter)


def flag_factory() -> Callable[[], Flag]:
    """The cheapest flag for the running backend (call from inside the event loop)."""
    loop = running_asyncio_loop()
    if loop is not None:
        return partial(AsyncioFlag, loop)
    return type(anyio.Event())
