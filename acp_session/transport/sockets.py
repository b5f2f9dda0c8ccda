"""Client transports over TCP and Unix domain sockets (an agent already listening somewhere)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from .base import StreamTransport

__all__ = ["tcp", "unix_socket"]


@asynccontextmanager
async def tcp(host: str, port: int) -> AsyncIterator[StreamTransport]:
    """Connect to ``host:port`` and yield the transport; the socket is closed on exit."""
    stream = await anyio.connect_tcp(host, port)
    transport = StreamTransport(stream, stream)
    try:
        yield transport
    finally:
        await transport.aclose()


@asynccontextmanager
async def unix_socket(path: str | os.PathLike[str]) -> AsyncIterator[StreamTransport]:
    """Connect to the Unix domain socket at ``path`` and yield the transport."""
    stream = await anyio.connect_unix(path)
    transport = StreamTransport(stream, stream)
    try:
        yield transport
    finally:
        await transport.aclose()
