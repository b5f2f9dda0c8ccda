"""Ordered, coalescing write queue drained by one writer task.

Frames are queued synchronously (so ``request()`` and ``cancel()`` need no await and keep call order)
and written in order by a single task. Producers that can wait (``notify``, the reader sending replies)
wait for the queue to drop under a high-water mark, so memory stays bounded when the peer stops reading.

When the transport can write without waiting (``send_nowait``, the agent's stdin pipe), a frame put
on an empty queue is written on the spot: no task switch and no extra pass of the event loop per
message. Otherwise a request's caller usually writes the queue itself when it starts waiting for the
answer, so ``put_soon`` wakes the writer task only if the frame is still queued once the current
callbacks have run (asyncio: one ``call_soon``). Elsewhere it wakes at once.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable

import anyio

from ..transport.pipe import running_asyncio_loop
from .flag import Flag

__all__ = ["Outbox"]

_MAX_WRITE = 1024 * 1024  # coalesce queued frames into writes of about this size


class Outbox:
    def __init__(self, high_water: int) -> None:
        self.high_water = high_water
        self._frames: deque[bytes] = deque()
        self._size = 0
        self._wakeup: Flag | None = None
        self._progress: Flag | None = None
        self._failed = False
        self._busy = False  # one task at a time writes; it keeps going until the queue is empty
        self._new_event: Callable[[], Flag] = anyio.Event
        self._call_soon: Callable[[Callable[[], None]], object] | None = None
        self._kick_pending = False
        self._send_nowait: Callable[[bytes], int] | None = None

    def bind(self, new_event: Callable[[], Flag], send_nowait: Callable[[bytes], int] | None = None) -> None:
        """Called from the running loop before use, with the flag type to wait on and, when the transport
        has one, ``send_nowait(data)``, which writes what fits at once and returns how many bytes it wrote."""
        self._new_event = new_event
        loop = running_asyncio_loop()
        self._call_soon = None if loop is None else loop.call_soon
        self._send_nowait = send_nowait

    @property
    def size(self) -> int:
        """Bytes queued and not yet handed to the transport."""
        return self._size

    @property
    def failed(self) -> bool:
        return self._failed

    def put(self, frame: bytes) -> None:
        if self._failed:
            return
        frames = self._frames
        send_nowait = self._send_nowait
        if send_nowait is not None and not frames and not self._busy:
            # Written on the spot (every request takes this path on a pipe, so it is kept inline).
            try:
                written = send_nowait(frame)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                self.fail()
                return
            if written == len(frame):
                return
            frame = frame[written:]
        frames.append(frame)
        self._size += len(frame)
        if self._wakeup is not None:
            self._wakeup.set()

    @property
    def put_request(self) -> Callable[[bytes], None]:
        """How to queue a request: ``put`` when frames can be written at once, else ``put_soon``."""
        return self.put if self._send_nowait is not None else self.put_soon

    def put_soon(self, frame: bytes) -> None:
        """``put`` for a frame whose producer will most likely ``flush`` right away (a request)."""
        call_soon = self._call_soon
        if call_soon is None or self._failed or self._send_nowait is not None:
            self.put(frame)
            return
        self._frames.append(frame)
        self._size += len(frame)
        if not self._kick_pending:
            self._kick_pending = True
            call_soon(self._kick)

    def _kick(self) -> None:
        self._kick_pending = False
        if self._frames and self._wakeup is not None:
            self._wakeup.set()

    async def wait_writable(self) -> None:
        """Wait while more than ``high_water`` bytes are queued (backpressure)."""
        while self._size > self.high_water and not self._failed:
            await self._wait_progress()

    async def wait_flushed(self) -> None:
        """Wait until everything queued so far has been written (or writing failed)."""
        while self._size and not self._failed:
            await self._wait_progress()

    async def _wait_progress(self) -> None:
        if self._progress is None:
            self._progress = self._new_event()
        await self._progress.wait()

    async def flush(self, send: Callable[[bytes], Awaitable[None]]) -> None:
        """Write everything queued, in order. Any task may call this (the writer task, or a caller about
        to wait for an answer, which saves a task switch). If another task is writing already, return at
        once: that task keeps writing until the queue is empty, so frames stay whole and in order."""
        frames = self._frames
        if not frames or self._failed or self._busy:
            return
        self._busy = True
        try:
            while frames:
                if len(frames) == 1:
                    chunk = frames.popleft()
                else:
                    parts = [frames.popleft()]
                    total = len(parts[0])
                    while frames and total < _MAX_WRITE:
                        total += len(frames[0])
                        parts.append(frames.popleft())
                    chunk = b"".join(parts)
                try:
                    await send(chunk)
                finally:
                    self._size -= len(chunk)
                if self._progress is not None:
                    self._progress.set()
                    self._progress = None
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            self.fail()
        finally:
            self._busy = False
            if frames and self._wakeup is not None:
                self._wakeup.set()  # this writer was cancelled: the writer task takes over

    async def run(self, send: Callable[[bytes], Awaitable[None]]) -> None:
        """The writer task body. Returns once writing failed."""
        while not self._failed:
            if not self._frames or self._busy:
                self._wakeup = self._new_event()
                await self._wakeup.wait()
                self._wakeup = None
            await self.flush(send)

    def fail(self) -> None:
        """Writing is no longer possible: drop queued frames and release every waiter."""
        self._failed = True
        self._frames.clear()
        self._size = 0
        if self._progress is not None:
            self._progress.set()
            self._progress = None
