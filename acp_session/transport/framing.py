"""Sans-IO newline-delimited framing (ACP stdio: one JSON message per line, no embedded newlines).

``FrameReader`` turns arbitrary byte chunks into frames. It never holds more than ``max_frame_size``
bytes plus one incoming chunk: once a partial frame grows past the limit its bytes are dropped and the
reader skips to the next newline, then reports the oversized frame instead of buffering it.
``check_utf8`` marks the frames of a read that are not UTF-8 text, and ``encode_frames`` turns messages
into lines: what a stream transport does to hand the rpc layer whole frames (``transport.lines``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "SHORT_FRAME",
    "Frame",
    "FrameReader",
    "InvalidUtf8Frame",
    "LineBlock",
    "OversizedFrame",
    "split_block",
    "check_utf8",
    "encode_frame",
    "encode_frames",
    "expand_blocks",
    "has_line_break",
    "is_utf8",
    "lines_in",
]

DEFAULT_MAX_FRAME_SIZE = 32 * 1024 * 1024
_NL = b"\n"
_CR = b"\r"
SHORT_FRAME = 2048
"""Below this size a frame is searched byte by byte (see ``has_line_break``)."""


@dataclass(frozen=True, slots=True)
class OversizedFrame:
    """Marks a frame that was skipped because it exceeded the limit (``size`` bytes, without newline)."""

    size: int


@dataclass(frozen=True, slots=True)
class InvalidUtf8Frame:
    """Marks a frame that is not UTF-8 text (``data``, its bytes): no JSON message, whatever it holds."""

    data: bytes


class LineBlock:
    """A run of ``count`` whole lines of one read, not yet split: ``data`` ends with the last line's newline.

    ``FrameReader.feed_block`` hands a long read over this way so that the rpc layer can decode every line in
    one msgspec call (``RpcCore.receive_block``), which costs about 100 ns per line less than splitting and
    decoding each; the remote transports hand over a read's messages so too (a run of SSE events, a read's
    WebSocket messages), each message one line. No line in it is over the frame size limit, and its bytes are
    valid UTF-8.
    """

    __slots__ = ("count", "data", "on_split")

    def __init__(self, data: bytes, count: int, on_split: Callable[[list[bytes]], None] | None = None) -> None:
        self.data = data
        self.count = count
        self.on_split = on_split
        """Called once with the block's lines when it is split into them (``split_block``, whoever splits it): a
        transport that must see some messages before the rpc layer takes them (the HTTP profile's routing: the
        requests and answers) sees them then. A block the rpc layer decodes whole holds typed notifications only,
        none of which carries an ``id``."""

    def __repr__(self) -> str:
        return f"LineBlock({self.count} lines, {len(self.data)} bytes)"


Frame = bytes | OversizedFrame | InvalidUtf8Frame | LineBlock
"""What a frame transport hands the rpc layer: one whole message (valid UTF-8), a marker for one that
could not be delivered as such, or a block of whole lines to be decoded at once or split (``LineBlock``)."""

BLOCK_LINES = 4
"""A read is handed over as a ``LineBlock`` only when it holds at least this many whole lines: a trickle of
one or two lines gains nothing from it."""


def expand_blocks(frames: list[Frame]) -> list[Frame]:
    """``frames`` with every ``LineBlock`` split into its lines: the list that events' line indexes count."""
    out: list[Frame] = []
    for frame in frames:
        if type(frame) is LineBlock:
            out += split_block(frame)
        else:
            out.append(frame)
    return out


def lines_in(frames: list[Frame]) -> int:
    """How many frames ``frames`` stands for, a ``LineBlock`` counting its lines (a stream read has one, last; a
    remote transport's batch may hold several, anywhere)."""
    count = len(frames)
    for frame in frames:
        if type(frame) is LineBlock:
            count += frame.count - 1
    return count


def split_block(block: LineBlock) -> list[Frame]:
    """The block's lines as frames (already valid UTF-8 and within the size limit: ``feed_block`` saw to both)."""
    lines = block.data.split(_NL)
    lines.pop()  # after the last newline: empty
    hook = block.on_split
    if hook is not None:
        block.on_split = None
        hook(lines)
    return lines  # type: ignore[return-value]  # list is invariant; bytes are Frames


def check_utf8(frames: list[bytes | OversizedFrame], data: bytes) -> list[Frame]:
    """``frames`` as ``FrameReader.feed(data)`` returned them, with each frame that is not UTF-8 replaced by an
    ``InvalidUtf8Frame``: a frame transport's frames are text, so the rpc layer's fast paths need not check.

    Every frame but the first lies wholly within ``data``, so one ``isascii`` of the whole read (the usual
    answer) and one of the first frame clear the lot.
    """
    first = frames[0]
    if data.isascii() and (type(first) is not bytes or first.isascii()):
        return frames  # type: ignore[return-value]  # list is invariant; the items are fine
    return [
        frame if type(frame) is not bytes or frame.isascii() or is_utf8(frame) else InvalidUtf8Frame(frame)
        for frame in frames
    ]


def is_utf8(frame: bytes) -> bool:
    """Whether these bytes decode as UTF-8 (the line transports and the remote ones check received frames)."""
    try:
        frame.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def encode_frames(messages: list[bytes]) -> bytes:
    """Messages as consecutive lines, written at once (``encode_frame`` of each, joined without a copy more)."""
    if len(messages) == 1:
        return encode_frame(messages[0])
    lines = [_one_line(message) if has_line_break(message) else message for message in messages]
    lines.append(b"")  # the join then ends with the last message's newline
    return _NL.join(lines)


def _one_line(body: bytes) -> bytes:
    return body.replace(_NL, b" ").replace(_CR, b" ")


def encode_frame(body: bytes) -> bytes:
    """Terminate one encoded JSON message with a newline.

    Raw newlines can only be insignificant whitespace in valid JSON (inside strings they must be escaped),
    so replacing them with spaces keeps the message identical while guaranteeing one line per message.

    Only a ``msgspec.Raw`` value can bring a raw newline along, so the check nearly always finds none.
    """
    if has_line_break(body):
        body = _one_line(body)
    return body + _NL


def has_line_break(body: bytes) -> bool:
    """Whether ``body`` holds a raw line feed or carriage return.

    Short bodies are tested with one ``splitlines``, CPython's own loop, rather than ``in``: ``in`` uses the
    C library's vectorised ``memchr``, which costs microseconds in a process that has just woken from a wait
    (about 2 us per request on the round-trip path, measured in docs/performance.md). Long bodies, where
    ``memchr``'s speed wins by far, use ``in``. ``PipeFrames.send_nowait`` inlines this test.
    """
    if len(body) < SHORT_FRAME:
        lines = body.splitlines()
        return len(lines) > 1 or (len(lines) == 1 and len(lines[0]) < len(body))  # or one trailing break
    return _NL in body or _CR in body


class FrameReader:
    """Split a byte stream into newline-terminated frames with a size limit."""

    __slots__ = ("_buffer", "_skipped", "at_frame_start", "max_frame_size")

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        if max_frame_size < 1:
            raise ValueError("max_frame_size must be positive")
        self.max_frame_size = max_frame_size
        self._buffer = bytearray()
        self._skipped = -1  # >= 0 while discarding the rest of an oversized frame
        # True when the next byte fed starts a new frame (nothing held, nothing being skipped). A plain
        # attribute, not a property: a transport's readiness callback reads it on every round trip.
        self.at_frame_start = True

    @property
    def buffered(self) -> int:
        """Bytes currently held for an unfinished frame."""
        return len(self._buffer)

    def feed(self, data: bytes) -> list[bytes | OversizedFrame]:
        """Take the next chunk of the stream; return the frames it completed, in order.

        Frames are returned without their newline; blank lines are returned too (the caller decides).
        """
        limit = self.max_frame_size
        buf = self._buffer
        if self._skipped < 0 and len(buf) + len(data) <= limit:
            # Common case: no frame can reach the limit, so one C-level split does all the work. The first
            # piece completes the buffered frame (if any), the last is the unfinished one (possibly empty).
            pieces = data.split(_NL)
            tail = pieces.pop()
            if buf and pieces:
                buf += pieces[0]
                pieces[0] = bytes(buf)
                buf.clear()
            if tail:
                buf += tail
            self.at_frame_start = not buf
            return pieces  # type: ignore[return-value]  # list is invariant; bytes items are fine
        out = self._feed_with_limit(data)
        self.at_frame_start = not self._buffer and self._skipped < 0
        return out

    def _feed_with_limit(self, data: bytes) -> list[bytes | OversizedFrame]:
        """``feed`` when a frame in ``data`` may reach the size limit, or one is being skipped."""
        limit = self.max_frame_size
        out: list[bytes | OversizedFrame] = []
        start = 0
        end = len(data)
        if self._skipped >= 0:
            nl = data.find(_NL)
            if nl < 0:
                self._skipped += end
                return out
            out.append(OversizedFrame(self._skipped + nl))
            self._skipped = -1
            start = nl + 1
        buf = self._buffer
        if buf:
            nl = data.find(_NL, start)
            if nl < 0:
                buf += data[start:] if start else data
                if len(buf) > limit:
                    self._skipped = len(buf)
                    buf.clear()
                return out
            if len(buf) + nl - start > limit:
                out.append(OversizedFrame(len(buf) + nl - start))
            else:
                buf += data[start:nl]
                out.append(bytes(buf))
            buf.clear()
            start = nl + 1
        if end - start <= limit:
            # Common case: no frame in the rest of this chunk can be oversized, so one C-level split does
            # all the work (the last piece is the unfinished frame, possibly empty).
            parts = (data[start:] if start else data).split(_NL)
            tail = parts.pop()
            if tail:
                buf += tail
            if out:
                out += parts
                return out
            return parts  # type: ignore[return-value]  # list is invariant; bytes items are fine
        find = data.find
        while start < end:
            nl = find(_NL, start)
            if nl < 0:
                if end - start > limit:
                    self._skipped = end - start
                else:
                    buf += data[start:]
                break
            if nl - start > limit:
                out.append(OversizedFrame(nl - start))
            else:
                out.append(data[start:nl])
            start = nl + 1
        return out

    def feed_block(self, data: bytes) -> list[Frame]:
        """``check_utf8(feed(data), data)``, except that a read's whole lines after the first come back as one
        ``LineBlock`` when there are at least ``BLOCK_LINES`` of them, none can reach the size limit and they are
        valid UTF-8.

        The first line of the result completes the frame held from the previous read, if any; the bytes after
        the last newline are held, as ``feed`` does. Finding the lines costs one ``replace`` (a count of the
        newlines), one ``rfind`` and one ``isascii``, C loops over the read, instead of one bytes object per
        line. The UTF-8 check is the block's own because msgspec does not check what it skips (an unknown
        field, a ``Raw`` value).
        """
        buf = self._buffer
        if self._skipped < 0 and len(buf) + len(data) <= self.max_frame_size:
            lines = len(data) - len(data.replace(_NL, b""))
            if lines - (1 if buf else 0) >= BLOCK_LINES:
                start = data.find(_NL) + 1 if buf else 0
                end = data.rfind(_NL) + 1
                block = data if start == 0 and end == len(data) else data[start:end]
                if block.isascii() or is_utf8(block):
                    out: list[Frame] = []
                    if buf:
                        buf += data[: start - 1]
                        out += check_utf8([bytes(buf)], b"")
                        buf.clear()
                        lines -= 1
                    out.append(LineBlock(block, lines))
                    if end < len(data):
                        buf += data[end:]
                    self.at_frame_start = not buf
                    return out
        frames = self.feed(data)
        return check_utf8(frames, data) if frames else []

    def feed_eof(self) -> list[bytes | OversizedFrame]:
        """The stream ended: a final frame without a trailing newline is still delivered."""
        out: list[bytes | OversizedFrame] = []
        if self._skipped >= 0:
            out.append(OversizedFrame(self._skipped))
            self._skipped = -1
        elif self._buffer:
            out.append(bytes(self._buffer))
            self._buffer.clear()
        self.at_frame_start = True
        return out
