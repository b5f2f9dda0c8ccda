"""Read an OS pipe directly: a non-blocking ``os.read`` once the event loop says the pipe is readable.

The agent's stdout is the hottest byte stream in the library. Going through asyncio's subprocess
``StreamReader`` costs a copy into its buffer and another out of it, plus a task wake-up per 64 KiB; reading
the file descriptor ourselves halves the per-message read cost (see docs/performance.md). The pipe is also
asked for a 1 MiB kernel buffer (Linux ``F_SETPIPE_SZ``, best effort) so a fast agent blocks less often.
"""

from __future__ import annotations

import os
from contextlib import suppress

import anyio

from .base import DEFAULT_RECEIVE_SIZE

__all__ = ["PIPE_BUFFER_SIZE", "PipeReader", "open_pipe"]

PIPE_BUFFER_SIZE = 1 << 20
_F_SETPIPE_SZ = 1031  # Linux fcntl command; elsewhere the call fails and the default buffer stays


def open_pipe() -> tuple[PipeReader, int]:
    """A new pipe: our reading end as a ``PipeReader`` and the writing end's file descriptor for the child."""
    read_fd, write_fd = os.pipe()
    with suppress(OSError, ImportError):
        import fcntl

        fcntl.fcntl(read_fd, _F_SETPIPE_SZ, PIPE_BUFFER_SIZE)
    os.set_blocking(read_fd, False)
    return PipeReader(read_fd), write_fd


class PipeReader:
    """The reading end of a pipe as an anyio-style byte receiver (``EndOfStream`` at end of file)."""

    __slots__ = ("_fd",)

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def receive(self, max_bytes: int = DEFAULT_RECEIVE_SIZE) -> bytes:
        while True:
            fd = self._fd
            if fd < 0:
                raise anyio.ClosedResourceError
            try:
                data = os.read(fd, max_bytes)
            except BlockingIOError:
                await anyio.wait_readable(fd)
                continue
            except OSError as exc:
                raise anyio.BrokenResourceError from exc
            if not data:
                raise anyio.EndOfStream
            return data

    async def aclose(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            anyio.notify_closing(fd)  # wakes a task blocked in wait_readable with ClosedResourceError
            os.close(fd)
