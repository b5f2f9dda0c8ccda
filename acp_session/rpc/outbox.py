"""Ordered, coalescing write queue drained by one writer task.

Frames (whole messages) are queued synchronously (so ``request()`` and ``cancel()`` need no await and keep
call order) and written in order by a single task, several at a time: the transport's ``send_frames`` gets a
batch of about ``_MAX_WRITE`` bytes, which a stream transport writes at once. Producers that can wait
(``notify``, the reader sending replies) wait for the queue to drop under a high-water mark, so memory stays
bounded when the peer stops reading.

When the transport can write without waiting (``send_nowait``, the agent's stdin pipe), a frame put
on an empty queue is written on the spot: no task switch and no extra pass of the event loop per
message. Otherwise a request's caller usually writes the queue itself when it starts waiting for the
answer, so ``put_request`` wakes the writer task only if the frame is still queued once the current
callbacks have run (the backend's ``call_soon``, on asyncio). Elsewhere it wakes at once.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable

import anyio

from ..transport.backend import Flag

__all__ = ["Outbox"]

_MAX_WRITE = 1024 * 1024  # coalesce queued frames into writes of about this size
_SEND_FAILED = (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)


class Outbox:
    def __init__(self, high_water: int) -> None:
        self.high_water = high_water
        self._frames: deque[bytes] = deque()
        self.size = 0
        """Bytes queued and not yet handed to the transport (a plain attribute: read on every await)."""
        self.queued_total = 0
        """Bytes ever queued (not written on the spot); with ``written_total``, tells when a frame has left."""
        self.written_total = 0
        """Bytes of queued frames ever handed to the transport (or dropped when writing failed)."""
        self._wakeup: Flag | None = None
        self._progress: Flag | None = None
        self._failed = False
        self._busy = False  # one task at a time writes; it keeps going until the queue is empty
        self._new_event: Callable[[], Flag] = anyio.Event
        self._call_soon: Callable[[Callable[[], None]], object] | None = None
        self._kick_pending = False
        self._send_nowait: Callable[[bytes], bool] | None = None

    def bind(
        self,
        new_event: Callable[[], Flag],
        call_soon: Callable[[Callable[[], None]], object] | None = None,
        send_nowait: Callable[[bytes], bool] | None = None,
    ) -> None:
        """Called from the running loop before use, with the backend's flag type and ``call_soon`` and, when
        the transport has one, ``send_nowait(frame)``, which sends a whole frame at once or nothing (False)."""
        self._new_event = new_event
        self._call_soon = call_soon
        self._send_nowait = send_nowait

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
                if send_nowait(frame):
                    return
            except _SEND_FAILED:
                self.fail()
                return
        frames.append(frame)
        size = len(frame)
        self.size += size
        self.queued_total += size
        if self._wakeup is not None:
            self._wakeup.set()

    def put_many(self, frames: list[bytes]) -> None:
        """``put`` each of ``frames``, in order (queued at once when none can be written on the spot)."""
        if self._send_nowait is not None or self._failed:
            for frame in frames:
                self.put(frame)
            return
        self._frames.extend(frames)
        size = sum(map(len, frames))
        self.size += size
        self.queued_total += size
        if self._wakeup is not None:
            self._wakeup.set()

    def put_request(self, frame: bytes) -> None:
        """``put`` for a frame whose producer will most likely ``flush`` right away (a request): sent on the
        spot if possible, else queued, and the writer task woken only if it is still queued once the current
        callbacks have run."""
        if self._failed:
            return
        frames = self._frames
        send_nowait = self._send_nowait
        if send_nowait is not None and not frames and not self._busy:
            try:
                if send_nowait(frame):
                    return
            except _SEND_FAILED:
                self.fail()
                return
        call_soon = self._call_soon
        frames.append(frame)
        size = len(frame)
        self.size += size
        self.queued_total += size
        if call_soon is None:
            if self._wakeup is not None:
                self._wakeup.set()
        elif not self._kick_pending:
            self._kick_pending = True
            call_soon(self._kick)

    def _kick(self) -> None:
        self._kick_pending = False
        if self._frames and self._wakeup is not None:
            self._wakeup.set()

    async def wait_writable(self) -> None:
        """Wait while more than ``high_water`` bytes are queued (backpressure)."""
        while self.size > self.high_water and not self._failed:
            await self._wait_progress()

    async def wait_written(self, mark: int) -> None:
        """Wait until the frames queued up to ``mark`` (a ``queued_total`` taken after a ``put``) have left."""
        while self.written_total < mark and not self._failed:
            await self._wait_progress()

    async def wait_flushed(self) -> None:
        """Wait until everything queued so far has been written (or writing failed)."""
        while self.size and not self._failed:
            await self._wait_progress()

    async def _wait_progress(self) -> None:
        if self._progress is None:
            self._progress = self._new_event()
        await self._progress.wait()

    async def flush(self, send: Callable[[list[bytes]], Awaitable[None]]) -> None:
        """Write everything queued, in order, with ``send(batch of frames)``. Any task may call this (the writer
        task, or a caller about to wait for an answer, which saves a task switch). If another task is writing
        already, return at once: that task keeps writing until the queue is empty, so frames stay in order.
        A batch whose send is cancelled counts as handed over: the transport finishes a frame it has started."""
        frames = self._frames
        if not frames or self._failed or self._busy:
            return
        self._busy = True
        try:
            while frames:
                batch = [frames.popleft()]
                total = len(batch[0])
                while frames and total < _MAX_WRITE:
                    total += len(frames[0])
                    batch.append(frames.popleft())
                try:
                    await send(batch)
                finally:
                    self.size -= total
                    self.written_total += total
                if self._progress is not None:
                    self._progress.set()
                    self._progress = None
        except _SEND_FAILED:
            self.fail()
        finally:
            self._busy = False
            if frames and self._wakeup is not None:
                self._wakeup.set()  # this writer was cancelled: the writer task takes over

    async def run(self, send: Callable[[list[bytes]], Awaitable[None]]) -> None:
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
        self.size = 0
        self.written_total = self.queued_total
        if self._progress is not None:
            self._progress.set()
            self._progress = None
