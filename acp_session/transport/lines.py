"""Newline framing over any byte stream, and the choice of framing for a transport a ``Connection`` is given."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import anyio

from .base import DEFAULT_RECEIVE_SIZE, FramedStream, FrameTransport, PeerExit, Transport
from .framing import DEFAULT_MAX_FRAME_SIZE, Frame, FrameReader, check_utf8, encode_frames

__all__ = ["STREAM_END", "LineFrames", "frame_transport"]

STREAM_END = (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError)
"""What ending a receive means the stream is over (its last unfinished frame is still delivered)."""


class LineFrames:
    """A ``FrameTransport`` over a byte ``Transport``: one JSON message per line (ACP's stdio framing).

    A final frame without a newline at the end of the stream is still delivered; a frame longer than
    ``max_frame_size`` is skipped and reported as an ``OversizedFrame`` (see ``FrameReader``).
    """

    __slots__ = ("_end", "_reader", "_receive", "_send", "stream")

    def __init__(self, stream: Transport, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self.stream = stream
        """The byte stream: closing and ``peer_exit`` go to it."""
        self._receive: Callable[[int], Awaitable[bytes]] = stream.receive
        self._send: Callable[[bytes], Awaitable[None]] = stream.send
        self._reader = FrameReader(max_frame_size)
        self._end: BaseException | None = None

    async def receive_frames(self) -> list[Frame]:
        reader = self._reader
        receive = self._receive
        while self._end is None:
            try:
                data = await receive(DEFAULT_RECEIVE_SIZE)
            except STREAM_END as exc:
                self._end = exc
                last = reader.feed_eof()
                if last:
                    return check_utf8(last, b"")
                break
            frames = reader.feed_block(data)
            if frames:
                return frames
        raise self._end

    async def send_frames(self, frames: list[bytes]) -> None:
        await self._send(encode_frames(frames))

    async def aclose(self) -> None:
        await self.stream.aclose()

    async def peer_exit(self) -> PeerExit:
        return await self.stream.peer_exit()


def frame_transport(
    transport: Transport | FrameTransport, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE
) -> FrameTransport:
    """Frames over ``transport``: itself if it is message-framed already, its own framing if it has one
    (``FramedStream``: an agent's pipes), else newline framing over its bytes (``LineFrames``)."""
    if isinstance(transport, FrameTransport):
        return transport
    if isinstance(transport, FramedStream):
        return transport.frames(max_frame_size)
    return LineFrames(transport, max_frame_size)
