"""A burst of outgoing WebSocket messages in one write.

ASGI has no way to say "these N messages at once": each ``websocket.send`` is one message, and hypercorn frames
it (wsproto) and writes it to the socket on its own, a pass through its protocol stack and a system call per
message; a relay streaming small updates spends most of its time there (docs/performance.md, "The host").
One JSON-RPC message per text frame is the RFD's rule, so messages are never merged: ``FrameWriter`` writes
the frames of a burst back to back, in one write.

It does so only where the result is byte for byte what one ``websocket.send`` per message would write: under
hypercorn (the ``send`` callable is its WebSocket stream's), with no extension negotiated (no
``permessage-deflate``, whose frames only wsproto can make) and the default text frames (``ServerHooks``).
The frames are then made here (a server's text frame: FIN, opcode 1, the length, the UTF-8 payload, no mask)
and handed to hypercorn's stream as the one piece of raw data its own ``websocket.send`` would have handed it,
through the same path (its write lock, its HTTP/1.1 or HTTP/2 protocol). Anywhere else it sends one message at
a time, as before.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from .hooks import ServerHooks

__all__ = ["FrameWriter", "text_frame"]

_SHORT = [bytes((0x81, length)) for length in range(126)]
_MEDIUM = b"\x81\x7e"


def text_frame(payload: bytes) -> bytes:
    """One unfragmented, unmasked text frame (a server's) around ``payload`` (UTF-8 already)."""
    length = len(payload)
    if length < 126:
        return _SHORT[length] + payload
    if length < 65536:
        return _MEDIUM + length.to_bytes(2, "big") + payload
    return b"\x81\x7f" + length.to_bytes(8, "big") + payload


class FrameWriter:
    """Writes the application's messages (each one text frame) to an ASGI WebSocket: a burst in one write where
    that is exact (the module's docstring), else one ``websocket.send`` per message."""

    def __init__(self, send: Callable[[Any], Awaitable[None]], hooks: ServerHooks) -> None:
        self._send = send
        self._hooks = hooks
        self._under: _Hypercorn | None = None
        if type(hooks).websocket_message is ServerHooks.websocket_message:  # a test server's frames go one by one
            self._under = _Hypercorn.of(send)
        self.bulk_writes = 0
        """Bursts written in one piece (the tests read it)."""

    async def write(self, frames: list[bytes]) -> None:
        """Send ``frames`` (JSON-RPC messages, UTF-8), each as one text frame, in order."""
        under = self._under
        if under is not None:
            data = under.frames(frames)
            if data is not None:
                if data:
                    self.bulk_writes += 1
                    await under.write(data)
                return
        hooks = self._hooks
        for frame in frames:
            message = hooks.websocket_message(frame)
            if isinstance(message, bytes):  # a test server's binary frames (ServerHooks)
                await self._send({"type": "websocket.send", "bytes": message})
            else:
                await self._send({"type": "websocket.send", "text": message})


class _Hypercorn:
    """hypercorn's WebSocket stream behind an ASGI ``send``, and what ``FrameWriter`` needs of it."""

    def __init__(self, stream: Any, connected: Any, open_state: Any, data: Any) -> None:
        self.stream = stream
        self._connected = connected
        self._open = open_state
        self._data = data

    @classmethod
    def of(cls, send: Callable[[Any], Awaitable[None]]) -> _Hypercorn | None:
        """When ``send`` is hypercorn's ``WSStream.app_send`` (with the attributes used here), else None."""
        stream = getattr(send, "__self__", None)
        if stream is None or type(stream).__module__ != "hypercorn.protocol.ws_stream":
            return None
        try:
            from hypercorn.protocol.events import Data
            from hypercorn.protocol.ws_stream import ASGIWebsocketState, WSStream
            from wsproto.connection import ConnectionState
        except ImportError:  # pragma: no cover - hypercorn brings wsproto
            return None
        if not isinstance(stream, WSStream) or getattr(send, "__func__", None) is not WSStream.app_send:
            return None
        if not all(hasattr(stream, name) for name in ("closed", "state", "connection", "stream_id", "send")):
            return None
        return cls(stream, ASGIWebsocketState.CONNECTED, ConnectionState.OPEN, Data)

    def frames(self, frames: list[bytes]) -> bytes | None:
        """The frames of ``frames`` back to back, or None when only the per-message path is exact; ``b""`` when
        hypercorn would drop them (the socket closing: its own send drops a message then)."""
        stream = self.stream
        if stream.closed:
            return b""
        if stream.state is not self._connected:
            return None  # hypercorn's own send says what is wrong
        connection = stream.connection
        if connection.state is not self._open:
            return b""
        proto = getattr(connection, "_proto", None)
        if proto is None or getattr(proto, "extensions", None) or getattr(proto, "_outbound_opcode", 0) is not None:
            return None
        for frame in frames:
            if not frame.isascii():
                frame.decode("utf-8")  # what the per-message path does first: invalid UTF-8 fails the same way
        short, medium = _SHORT, _MEDIUM  # ``text_frame`` inline: one call less per message
        return b"".join(
            [
                short[size] + frame
                if (size := len(frame)) < 126
                else (medium + size.to_bytes(2, "big") + frame if size < 65536 else text_frame(frame))
                for frame in frames
            ]
        )

    async def write(self, data: bytes) -> None:
        """``data`` down hypercorn's stream, as its own ``websocket.send`` hands down one frame."""
        stream = self.stream
        await stream.send(self._data(stream_id=stream.stream_id, data=data))
