"""Two connected in-process transport ends, for tests and for embedding an agent in the same process."""

from __future__ import annotations

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from .base import DEFAULT_RECEIVE_SIZE, PeerExit

__all__ = ["MemoryTransport", "memory_pair"]


class MemoryTransport:
    """One end of ``memory_pair()``: byte chunks over bounded anyio memory object streams."""

    def __init__(
        self, send_stream: MemoryObjectSendStream[bytes], receive_stream: MemoryObjectReceiveStream[bytes]
    ) -> None:
        self._send_stream = send_stream
        self._receive_stream = receive_stream
        self._leftover = b""

    async def receive(self, max_bytes: int = DEFAULT_RECEIVE_SIZE) -> bytes:
        data = self._leftover
        if not data:
            data = await self._receive_stream.receive()
        self._leftover = data[max_bytes:]
        return data[:max_bytes]

    async def send(self, item: bytes) -> None:
        if item:
            await self._send_stream.send(item)

    async def aclose(self) -> None:
        self._send_stream.close()
        self._receive_stream.close()

    async def peer_exit(self) -> PeerExit:
        return PeerExit()


def memory_pair(max_buffered_chunks: int = 64) -> tuple[MemoryTransport, MemoryTransport]:
    """Return two transports connected to each other; each direction buffers at most that many writes."""
    a_send, b_receive = anyio.create_memory_object_stream[bytes](max_buffered_chunks)
    b_send, a_receive = anyio.create_memory_object_stream[bytes](max_buffered_chunks)
    return MemoryTransport(a_send, a_receive), MemoryTransport(b_send, b_receive)
