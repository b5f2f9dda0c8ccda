"""The bounded queue between a remote transport's stream readers and the rpc layer, in batches.

An anyio memory stream hands items over one at a time: once it is full, each item the rpc layer takes wakes the
stream reader for one more, so the rpc layer ran once per four or five messages and the task switches cost more
than the parsing. Here a reader adds a whole read's messages at once and then waits until the queue is below its
limit again; the rpc layer takes everything queued at once, as it takes a whole read of a pipe on stdio.
Memory: at most ``limit`` messages plus one read's (an item that stands for several messages, a block of a read's
lines, counts as that many: ``put_all``'s ``size``).
"""

from __future__ import annotations

from collections import deque
from typing import Generic, TypeVar

import anyio
import anyio.lowlevel

__all__ = ["BatchInbox"]

T = TypeVar("T")


class BatchInbox(Generic[T]):
    """Many writers, one reader. ``close`` ends it: the reader gets what was queued, then ``EndOfStream``."""

    __slots__ = ("_closed", "_items", "_limit", "_readable", "_room", "_size")

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._items: deque[T] = deque()
        self._size = 0  # the messages queued (an item may stand for several)
        self._closed = False
        self._readable: anyio.Event | None = None  # set when the reader waits for items
        self._room: anyio.Event | None = None  # set when writers wait for the queue to drain

    @property
    def closed(self) -> bool:
        return self._closed

    def put_nowait(self, item: T) -> None:
        """Queue ``item`` even past the limit (the transport's own few messages; the writer must not wait).
        Dropped once the inbox is closed: nobody reads any more."""
        if not self._closed:
            self._items.append(item)
            self._size += 1
            self._wake_reader()

    async def put_all(self, items: list[T], size: int | None = None) -> None:
        """Queue a read's ``items`` (``size``: the messages they stand for, when not one each), then wait while the
        queue is at its limit (backpressure on the reader)."""
        if self._closed:
            return
        self._items.extend(items)
        self._size += len(items) if size is None else size
        self._wake_reader()
        while self._size >= self._limit and not self._closed:
            room = self._room = self._room or anyio.Event()
            await room.wait()

    async def take(self) -> list[T]:
        """Everything queued (at least one item), waiting for it; ``EndOfStream`` once closed and drained."""
        if self._items:
            await anyio.lowlevel.checkpoint()  # lets cancellation in, and the writers run
        while not self._items:
            if self._closed:
                raise anyio.EndOfStream
            readable = self._readable = self._readable or anyio.Event()
            await readable.wait()
        items = list(self._items)
        self._items.clear()
        self._size = 0
        room, self._room = self._room, None
        if room is not None:
            room.set()
        return items

    def close(self) -> None:
        self._closed = True
        self._wake_reader()
        room, self._room = self._room, None
        if room is not None:
            room.set()

    def _wake_reader(self) -> None:
        readable, self._readable = self._readable, None
        if readable is not None:
            readable.set()
