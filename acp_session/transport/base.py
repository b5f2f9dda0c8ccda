"""The byte-stream interface the rpc layer reads and writes, plus a wrapper for anyio streams."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream

__all__ = ["DEFAULT_RECEIVE_SIZE", "PeerExit", "StreamTransport", "Transport"]

DEFAULT_RECEIVE_SIZE = 65536


@dataclass(frozen=True, slots=True)
class PeerExit:
    """Why the peer went away, as far as the transport knows (subprocesses know the most)."""

    exit_code: int | None = None
    stderr_tail: tuple[str, ...] = ()


@runtime_checkable
class Transport(Protocol):
    """A bidirectional byte stream (the subset of ``anyio.abc.ByteStream`` the rpc layer needs).

    ``receive`` raises ``anyio.EndOfStream`` (or ``ClosedResourceError``/``BrokenResourceError``) when the
    peer's side ends; ``send`` raises ``BrokenResourceError``/``ClosedResourceError`` when it cannot write.
    """

    async def receive(self, max_bytes: int = DEFAULT_RECEIVE_SIZE) -> bytes: ...

    async def send(self, item: bytes) -> None: ...

    async def aclose(self) -> None: ...

    async def peer_exit(self) -> PeerExit:
        """Called once the stream ended: wait briefly (well under 100 ms) for exit details."""
        ...


class StreamTransport:
    """A ``Transport`` over an anyio receive stream and send stream (sockets, pipes, ...)."""

    def __init__(self, receive_stream: ByteReceiveStream, send_stream: ByteSendStream) -> None:
        self._receive_stream = receive_stream
        self._send_stream = send_stream

    async def receive(self, max_bytes: int = DEFAULT_RECEIVE_SIZE) -> bytes:
        return await self._receive_stream.receive(max_bytes)

    async def send(self, item: bytes) -> None:
        await self._send_stream.send(item)

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True):
            await self._send_stream.aclose()
            await self._receive_stream.aclose()  # idempotent when both are the same stream

    async def peer_exit(self) -> PeerExit:
        return PeerExit()
