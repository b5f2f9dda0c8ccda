"""Serve on this process's own stdin/stdout (the agent side of the stdio transport).

Pipes and sockets are read and written without blocking the event loop (non-blocking file descriptors
polled with ``anyio.wait_readable``/``wait_writable``); anything else (a regular file, a terminal on an
unusual platform) falls back to worker threads. While serving, ``sys.stdout`` points at stderr so a stray
``print`` cannot corrupt the protocol stream.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress

import anyio

from .base import DEFAULT_RECEIVE_SIZE, PeerExit

__all__ = ["StdioServerTransport", "stdio_server"]


def _pollable(fd: int) -> bool:
    if sys.platform == "win32":
        return False
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class StdioServerTransport:
    """A ``Transport`` over two file descriptors (by default this process's stdin and stdout)."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self._read_fd = read_fd
        self._write_fd = write_fd
        self._poll_read = _pollable(read_fd)
        self._poll_write = _pollable(write_fd)
        self._restore: list[tuple[int, bool]] = []
        for fd, poll in ((read_fd, self._poll_read), (write_fd, self._poll_write)):
            if poll and os.get_blocking(fd):
                os.set_blocking(fd, False)
                self._restore.append((fd, True))
        self._eof = False
        self._closed = False

    async def receive(self, max_bytes: int = DEFAULT_RECEIVE_SIZE) -> bytes:
        if self._closed:
            raise anyio.ClosedResourceError
        if self._eof:
            raise anyio.EndOfStream
        if self._poll_read:
            while True:
                try:
                    data = os.read(self._read_fd, max_bytes)
                    break
                except BlockingIOError:
                    await anyio.wait_readable(self._read_fd)
        else:
            data = await anyio.to_thread.run_sync(os.read, self._read_fd, max_bytes, abandon_on_cancel=True)
        if not data:
            self._eof = True
            raise anyio.EndOfStream
        return data

    async def send(self, item: bytes) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        view = memoryview(item)
        while view:
            try:
                if self._poll_write:
                    written = os.write(self._write_fd, view)
                else:
                    written = await anyio.to_thread.run_sync(os.write, self._write_fd, view)
            except BlockingIOError:
                await anyio.wait_writable(self._write_fd)
                continue
            except (BrokenPipeError, ConnectionResetError) as exc:
                raise anyio.BrokenResourceError from exc
            view = view[written:]

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        for fd, blocking in self._restore:
            with suppress(OSError):
                os.set_blocking(fd, blocking)

    async def peer_exit(self) -> PeerExit:
        return PeerExit()


@asynccontextmanager
async def stdio_server(redirect_stdout: bool = True) -> AsyncIterator[StdioServerTransport]:
    """Yield a transport over this process's stdin/stdout (for agents built on the rpc layer)."""
    sys.stdout.flush()
    transport = StdioServerTransport(sys.stdin.fileno(), sys.stdout.fileno())
    saved = sys.stdout
    if redirect_stdout:
        sys.stdout = sys.stderr
    try:
        yield transport
    finally:
        sys.stdout = saved
        await transport.aclose()
