"""Read and write OS pipes directly: non-blocking ``os.read`` / ``os.write``, waiting only when they would block.

The agent's stdout is the hottest byte stream in the library, and every request round trip crosses both
pipes. Going through asyncio's subprocess streams costs a copy into their buffers and another out, a
task wake-up per 64 KiB, and stream bookkeeping on every write; using the file descriptors ourselves
halves the per-message read cost and trims the round trip (see docs/performance.md). The pipes are
asked for a 1 MiB kernel buffer (Linux ``F_SETPIPE_SZ``, best effort) so a fast peer blocks less often.

On asyncio the read end stays registered with the event loop between reads (a request/response
exchange waits on it every time, and registering costs two system calls). An answer often arrives just
before the reader waits again, so one readiness report with nobody waiting is tolerated; a second one in
a row unregisters the pipe, so unread data never keeps the loop busy. Other backends use
``anyio.wait_readable``.

Also on asyncio, a ready consumer (``set_ready_consumer``) is offered data that arrives while a receive
waits, inside the readiness callback. Whatever the consumer declines is returned by the waiting receive as
usual. ``poll_ready`` does the same on demand, for a caller that polls for its answer for a few microseconds
instead of going to sleep at once (``Connection(busy_poll=...)``).

``PipeFrames`` puts newline framing on a pair of these (an agent's stdout and stdin) and offers the rpc layer
the fast paths of a ``FastPathTransport``: a frame written on the spot, and a lone response settled in the
readiness callback, so only its waiting caller wakes.

Which event loop runs, and what it offers, is asked of ``backend.current_backend()``.
"""

from __future__ import annotations

import logging
import os
import select
from collections.abc import Callable
from contextlib import suppress

import anyio

from .backend import Backend, Waiter, current_backend
from .base import DEFAULT_RECEIVE_SIZE, Transport
from .framing import DEFAULT_MAX_FRAME_SIZE, SHORT_FRAME, FrameReader
from .lines import LineFrames

__all__ = ["PIPE_BUFFER_SIZE", "PipeFrames", "PipeReader", "PipeWriter", "open_pipe", "open_stdin_pipe"]

_log = logging.getLogger("acp_session.transport")
_NL = b"\n"
_CR = b"\r"
_NEWLINE_BYTE = 10
PIPE_BUFFER_SIZE = 1 << 20
_F_SETPIPE_SZ = 1031  # Linux fcntl command; elsewhere the call fails and the default buffer stays


def _enlarge(fd: int) -> None:
    with suppress(OSError, ImportError):
        import fcntl

        fcntl.fcntl(fd, _F_SETPIPE_SZ, PIPE_BUFFER_SIZE)


def open_pipe() -> tuple[PipeReader, int]:
    """A new pipe: our reading end as a ``PipeReader`` and the writing end's file descriptor for the child."""
    read_fd, write_fd = os.pipe()
    _enlarge(read_fd)
    os.set_blocking(read_fd, False)
    return PipeReader(read_fd), write_fd


def open_stdin_pipe() -> tuple[PipeWriter, int]:
    """A new pipe: our writing end as a ``PipeWriter`` and the reading end's file descriptor for the child
    (which stays blocking: non-blocking mode belongs to our end only)."""
    read_fd, write_fd = os.pipe()
    _enlarge(write_fd)
    os.set_blocking(write_fd, False)
    return PipeWriter(write_fd), read_fd


class PipeReader:
    """The reading end of a pipe as an anyio-style byte receiver (``EndOfStream`` at end of file)."""

    __slots__ = ("_backend", "_consumer", "_fd", "_idle_reports", "_lines", "_ready_data", "_registered", "_waiter")

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._backend: Backend | None = None  # decided on first wait
        self._waiter: Waiter | None = None
        self._registered = False
        self._idle_reports = 0
        self._consumer: Callable[[bytes], bool] | None = None
        self._lines: FrameReader | None = None
        self._ready_data = b""  # read by the readiness callback and declined by the consumer

    def set_ready_consumer(self, consumer: Callable[[bytes], bool] | None, lines: FrameReader | None = None) -> None:
        """Offer data that arrives during a waiting receive to ``consumer`` first (asyncio only).

        ``consumer(data)`` returns True if it handled ``data`` completely (the receive keeps waiting),
        or False, having changed nothing, to let the waiting receive return it. With ``lines``, the frame
        reader of whoever reads this pipe's data, only data that is exactly one whole line where that reader
        stands (``PipeFrames``) is offered; this test lives here to keep a call off the round trip's path.
        """
        self._consumer = consumer
        self._lines = lines

    async def receive(self, max_bytes: int = DEFAULT_RECEIVE_SIZE) -> bytes:
        while True:
            data = self._ready_data  # read by the readiness callback and declined by the consumer
            if data:
                self._ready_data = b""
                return data
            fd = self._fd
            if fd < 0:
                raise anyio.ClosedResourceError
            try:
                data = os.read(fd, max_bytes)
            except BlockingIOError:
                await self._wait_readable(fd)
                continue
            except OSError as exc:
                raise anyio.BrokenResourceError from exc
            if not data:
                raise anyio.EndOfStream
            return data

    async def _wait_readable(self, fd: int) -> None:
        backend = self._backend
        if backend is None:
            backend = self._backend = current_backend()
        if not backend.readiness_callbacks or backend.new_waiter is None:
            await anyio.wait_readable(fd)
            return
        if self._waiter is not None:
            raise anyio.BusyResourceError("receiving from")
        waiter = backend.new_waiter()
        self._waiter = waiter
        self._idle_reports = 0
        if not self._registered:
            backend.add_reader(fd, self._readable)
            self._registered = True
        try:
            await waiter
        finally:
            self._waiter = None

    def _readable(self) -> None:
        waiter = self._waiter
        if waiter is None:
            self._idle_reports += 1
            if self._idle_reports > 1:
                self._unregister()  # nobody has been waiting: stop watching until somebody does
            return
        if not waiter.done():
            if self._consumer is None:
                waiter.set_result(None)
            else:
                self._offer(waiter, self._consumer)

    def poll_ready(self) -> bool | None:
        """While a receive waits on asyncio with a ready consumer: read what the pipe holds right now and
        handle it as the readiness callback would. True if data came (taken by the consumer, or handed to
        the receive, which then wakes), False if there was none yet, None if polling is not possible now
        (no receive waiting, or no consumer), so a caller should stop polling and wait normally."""
        waiter = self._waiter
        consumer = self._consumer
        if waiter is None or consumer is None or waiter.done():
            return None
        return self._offer(waiter, consumer)

    def _offer(self, waiter: Waiter, consumer: Callable[[bytes], bool]) -> bool:
        try:
            data = os.read(self._fd, DEFAULT_RECEIVE_SIZE)
        except BlockingIOError:
            return False
        except OSError:
            data = b""  # the waiting receive meets the error itself
        if data:
            lines = self._lines
            last = len(data) - 1
            # Right after a wake-up ``bytes.find`` and ``in`` (the C library's vectorised ``memchr``) cost
            # about 2 us each (docs/performance.md): the one-line test for what a response usually is, is
            # ``splitlines``; a long read (a stream of updates) gets ``find``, which stops at the first line.
            # A bare \r makes it more than one line: simply left alone.
            if lines is None or (
                lines.at_frame_start
                and last <= lines.max_frame_size
                and data[last] == _NEWLINE_BYTE
                and (len(data.splitlines()) == 1 if last < SHORT_FRAME else data.find(_NL) == last)
            ):
                try:
                    if consumer(data):
                        return True
                except Exception:
                    _log.exception("ready consumer failed; the data goes to the waiting receive")
            self._ready_data = data
        waiter.set_result(None)
        return True

    def _unregister(self) -> None:
        if self._registered and self._backend is not None:
            self._registered = False
            with suppress(Exception):
                self._backend.remove_reader(self._fd)

    async def aclose(self) -> None:
        fd = self._fd
        if fd < 0:
            return
        self._unregister()
        self._fd = -1
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_exception(anyio.ClosedResourceError())
        anyio.notify_closing(fd)  # wakes a task blocked in wait_readable with ClosedResourceError
        os.close(fd)


class PipeWriter:
    """The writing end of a pipe as an anyio-style byte sender: a write that fits goes out at once.

    A send cancelled while the pipe was full keeps its unwritten remainder and writes it first on the
    next send, so the peer never sees half a frame glued to the next one.
    """

    __slots__ = ("_fd", "_tail")

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._tail = b""

    def send_nowait(self, item: bytes) -> int:
        """Write what fits in the pipe now; returns the number of bytes written (0 if it is full)."""
        fd = self._fd
        if fd < 0:
            raise anyio.ClosedResourceError
        if self._tail:
            return 0  # a cut frame must be finished first, by send()
        try:
            return os.write(fd, item)
        except BlockingIOError:
            return 0
        except OSError as exc:
            raise anyio.BrokenResourceError from exc

    async def send(self, item: bytes) -> None:
        data: bytes | memoryview = item
        if self._tail:
            data, self._tail = self._tail + item, b""
        while True:
            fd = self._fd
            if fd < 0:
                raise anyio.ClosedResourceError
            try:
                written = os.write(fd, data)
            except BlockingIOError:
                written = 0
            except OSError as exc:  # EPIPE: the reader is gone
                raise anyio.BrokenResourceError from exc
            if written == len(data):
                return
            data = memoryview(data)[written:]
            try:
                await anyio.wait_writable(fd)
            except BaseException:
                self._tail = bytes(data)
                raise

    async def aclose(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            anyio.notify_closing(fd)
            os.close(fd)


_ATOMIC_WRITE = getattr(select, "PIPE_BUF", 512)
"""A pipe write of at most this many bytes goes out whole or not at all (POSIX), even without blocking."""


class PipeFrames(LineFrames):
    """Newline framing over an agent's stdout and stdin pipes: a ``FastPathTransport``.

    ``owner`` is the byte transport the pipes belong to (``AgentProcess``); closing and ``peer_exit`` go to it.
    Frames are read and written as by ``LineFrames``, plus:

    * ``send_nowait`` writes a frame that fits in one atomic pipe write (``PIPE_BUF`` bytes with its newline)
      at once, when nothing is left over from a cancelled send. Longer frames, and frames with a raw line
      break (only a ``msgspec.Raw`` value can bring one), are declined and go through ``send_frames``.
    * the ready consumer is offered data that is exactly one whole line, starting where the frame reader
      stands, newline included (JSON whitespace); anything else reaches ``receive_frames`` untouched.
    """

    __slots__ = ("_pipe_reader", "_writer", "poll_ready")

    def __init__(
        self, reader: PipeReader, writer: PipeWriter, owner: Transport, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE
    ) -> None:
        super().__init__(owner, max_frame_size)
        self._receive = reader.receive
        self._send = writer.send
        self._pipe_reader = reader
        self._writer = writer
        self.poll_ready: Callable[[], bool | None] = reader.poll_ready  # the reader's own: no call in between

    def send_nowait(self, frame: bytes) -> bool:
        # On every request's path: the line-break test is ``has_line_break`` inline, and the write is done here.
        size = len(frame)
        if size >= _ATOMIC_WRITE:
            return False
        if size < SHORT_FRAME:
            lines = frame.splitlines()
            if len(lines) != 1 or len(lines[0]) != size:
                return False
        elif _NL in frame or _CR in frame:
            return False
        writer = self._writer
        fd = writer._fd
        if fd < 0:
            raise anyio.ClosedResourceError
        if writer._tail:
            return False  # a cut frame must be finished first, by send()
        data = frame + _NL
        try:
            written = os.write(fd, data)
        except BlockingIOError:
            return False
        except OSError as exc:
            raise anyio.BrokenResourceError from exc
        if written <= size:  # not for a pipe (atomic writes); keep the rest for the next send
            writer._tail = data[written:]
        return True

    def set_ready_consumer(self, consumer: Callable[[bytes], bool] | None) -> None:
        """Offered: data that is exactly one whole line, newline included, where the frame reader stands."""
        self._pipe_reader.set_ready_consumer(consumer, self._reader)
