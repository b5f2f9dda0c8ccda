"""Sans-IO reader of the frames a WebSocket server sends (RFC 6455), for the receive hot path.

wsproto parses each frame through several generator and object layers and decodes every text payload to
``str``, which the rpc layer encodes again. This reader splits a read's frames with plain bytes slicing and hands
over a text message's bytes as they came: a whole unfragmented frame in the buffer (what servers send) is one
slice. httpx-ws (and wsproto) still do the handshake and everything we send.

What it checks, as a client must: server frames are not masked, reserved bits are clear (no extension is
negotiated), opcodes are known, control frames are final and at most 125 bytes, lengths use the shortest form,
continuations belong to a message, a close frame's code and reason are valid, text is UTF-8. A violation is
returned as a ``WsProtocolError`` (with the close code to send) after the messages before it, and ends reading.
Memory: a message over ``max_message`` bytes is skipped as it arrives (reported as one ``OversizedFrame``);
besides a message being read, at most one frame header or control frame is buffered.
"""

from __future__ import annotations

import codecs

from ..framing import OversizedFrame

__all__ = ["WsClose", "WsFrameReader", "WsPing", "WsProtocolError"]

_TEXT, _BINARY, _CLOSE, _PING, _PONG = 0x1, 0x2, 0x8, 0x9, 0xA
_PROTOCOL_CODES = frozenset({1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013})
"""The close codes below 3000 a peer may send (1005, 1006 and 1015 are local only; wsproto's list)."""


class WsProtocolError(Exception):
    """The server broke the WebSocket framing rules; ``code`` is the close code to answer with."""

    def __init__(self, code: int, message: str) -> None:
        self.code = code
        super().__init__(message)


class WsPing:
    """A ping from the server: answer with a pong carrying ``payload``."""

    __slots__ = ("payload",)

    def __init__(self, payload: bytes) -> None:
        self.payload = payload


class WsClose:
    """The server's close frame (``code`` 1005 when it carried none)."""

    __slots__ = ("code", "reason")

    def __init__(self, code: int, reason: str) -> None:
        self.code = code
        self.reason = reason


WsItem = bytes | OversizedFrame | WsPing | WsClose | WsProtocolError


class WsFrameReader:
    """Feed it what the socket gave; it returns the complete text messages (bytes), ``OversizedFrame`` for a
    skipped message, and the pings and the close among them, in order; a ``WsProtocolError`` comes last, and
    nothing after it or after the close. Binary messages are dropped."""

    __slots__ = (
        "_buf",
        "_closed",
        "_fin",
        "_max",
        "_opcode",
        "_pieces",
        "_remaining",
        "_size",
        "_skipping",
        "_utf8",
        "only_messages",
    )

    def __init__(self, max_message: int) -> None:
        self._max = max_message
        self._buf = b""  # unparsed bytes: at most a frame header or a control frame
        self._remaining = 0  # payload bytes of the current data frame still to come
        self._fin = False  # whether the current data frame ends its message
        self._opcode = 0  # the message being read (_TEXT or _BINARY), 0 between messages
        self._pieces: list[bytes] = []
        self._size = 0
        self._skipping = False
        self._utf8: codecs.IncrementalDecoder | None = None  # checks a text message piece by piece as it comes
        self._closed = False
        self.only_messages = True
        """Whether the last ``feed`` returned messages only (bytes and ``OversizedFrame``, no control item)."""

    def feed(self, data: bytes) -> list[WsItem]:
        out: list[WsItem] = []
        self.only_messages = True
        if self._closed:
            return out  # nothing after a close frame (or a broken one) counts
        try:
            self._feed(data, out)
        except WsProtocolError as exc:
            self._closed = True
            self.only_messages = False
            out.append(exc)
        return out

    def _feed(self, data: bytes, out: list[WsItem]) -> None:
        if self._remaining:
            taken = min(self._remaining, len(data))
            self._payload(data[:taken] if taken < len(data) else data, out)
            data = data[taken:]
            if self._remaining:
                return
        buf = self._buf + data if self._buf else data
        pos, end = 0, len(buf)
        maximum = self._max
        append = out.append
        while end - pos >= 2:
            b0, b1 = buf[pos], buf[pos + 1]
            if b0 == 0x81 and not self._opcode:  # a final text frame: the usual case, checked in few steps
                if b1 < 126:
                    start = pos + 2
                    stop = start + b1
                elif b1 == 126 and end - pos >= 4:
                    start = pos + 4
                    stop = start + (buf[pos + 2] << 8 | buf[pos + 3])
                    if stop - start < 126:
                        stop = end + 1  # not the shortest form: the general path below says so
                else:
                    stop = end + 1
                if stop <= end and stop - start <= maximum:
                    message = buf[start:stop]
                    if not message.isascii():
                        _check_utf8(message)
                    append(message)
                    pos = stop
                    continue
            if b1 & 0x80:
                raise WsProtocolError(1002, "the server sent a masked frame")
            if b0 & 0x70:
                raise WsProtocolError(1002, "the server set reserved bits of a frame")
            size, head = b1 & 0x7F, 2
            if size == 126:
                if end - pos < 4:
                    break
                size, head = int.from_bytes(buf[pos + 2 : pos + 4], "big"), 4
                if size < 126:
                    raise WsProtocolError(1002, "a frame length not in its shortest form")
            elif size == 127:
                if end - pos < 10:
                    break
                size, head = int.from_bytes(buf[pos + 2 : pos + 10], "big"), 10
                if size < 65536 or size >> 63:
                    raise WsProtocolError(1002, "a frame length not in its shortest form")
            opcode, fin = b0 & 0x0F, b0 & 0x80
            start = pos + head
            if opcode >= _CLOSE:
                if not fin or size > 125:
                    raise WsProtocolError(1002, "a fragmented or oversized control frame")
                if end - start < size:
                    break
                pos = start + size
                self._control(opcode, buf[start:pos], out)
                if self._closed:
                    return
                continue
            if opcode == 0:
                if not self._opcode:
                    raise WsProtocolError(1002, "a continuation frame outside a message")
            elif opcode > _BINARY:
                raise WsProtocolError(1002, f"a frame with the unknown opcode {opcode}")
            elif self._opcode:
                raise WsProtocolError(1002, "a new message inside a fragmented one")
            elif fin and opcode == _TEXT and size <= end - start and size <= maximum:
                pos = start + size  # the usual case: one whole text frame in the buffer
                message = buf[start:pos]
                if not message.isascii():
                    _check_utf8(message)
                out.append(message)
                continue
            else:
                self._opcode = opcode
            self._fin = bool(fin)
            self._remaining = size
            taken = min(size, end - start)
            pos = start + taken
            self._payload(buf[start:pos], out)
            if self._remaining:
                break
        self._buf = buf[pos:] if pos < end else b""

    def _payload(self, piece: bytes, out: list[WsItem]) -> None:
        """Part of the current data frame's payload arrived (the frame and the message end when it is all)."""
        self._remaining -= len(piece)
        self._size += len(piece)
        if not self._skipping and self._size > self._max:
            self._skipping, self._pieces = True, []
        if not self._skipping and self._opcode == _TEXT and piece:
            self._pieces.append(piece)
            if not piece.isascii():  # a broken byte fails the message now, not when its last fragment comes
                if self._utf8 is None:
                    self._utf8 = codecs.getincrementaldecoder("utf-8")()
                _check_piece(self._utf8, piece, False)
            elif self._utf8 is not None:
                _check_piece(self._utf8, piece, False)  # a character split before this piece must end in it
        if self._remaining or not self._fin:
            return
        if self._skipping:
            out.append(OversizedFrame(self._size))
        elif self._opcode == _TEXT:
            pieces = self._pieces
            message = pieces[0] if len(pieces) == 1 else b"".join(pieces)
            if self._utf8 is not None:
                _check_piece(self._utf8, b"", True)  # nothing left unfinished at the message's end
            out.append(message)
        self._opcode, self._pieces, self._size, self._skipping, self._utf8 = 0, [], 0, False, None

    def _control(self, opcode: int, payload: bytes, out: list[WsItem]) -> None:
        self.only_messages = False
        if opcode == _PING:
            out.append(WsPing(payload))
        elif opcode == _CLOSE:
            out.append(_close(payload))
            self._closed = True
        elif opcode != _PONG:
            raise WsProtocolError(1002, f"a frame with the unknown opcode {opcode}")


def _close(payload: bytes) -> WsClose:
    if not payload:
        return WsClose(1005, "")
    if len(payload) == 1:
        raise WsProtocolError(1002, "a close frame with a one-byte payload")
    code = int.from_bytes(payload[:2], "big")
    if code > 4999 or (code < 3000 and code not in _PROTOCOL_CODES):
        raise WsProtocolError(1002, f"a close frame with the invalid code {code}")
    return WsClose(code, _check_utf8(payload[2:]))


def _check_piece(decoder: codecs.IncrementalDecoder, piece: bytes, final: bool) -> None:
    try:
        decoder.decode(piece, final)
    except UnicodeDecodeError:
        raise WsProtocolError(1007, "a text message that is not UTF-8") from None


def _check_utf8(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise WsProtocolError(1007, "a text message that is not UTF-8") from None
