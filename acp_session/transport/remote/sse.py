"""Sans-IO parser of a ``text/event-stream`` body (the HTTP profile's GET streams), bounded against a hostile server.

The server's bytes arrive in arbitrary chunks: a line may end in LF, CRLF or a bare CR, and a CRLF (or a UTF-8
character) may be split across two chunks. The parser works on bytes, so a split character is simply joined
again; each event's data is checked as UTF-8 once it is whole. ``max_line`` bounds one line and ``max_event``
one event's data: past either, ``SseLimitExceeded`` is raised at once, before more is buffered, so an endless
line or a gigabyte event costs at most the limit plus one chunk.

Linear in the bytes fed, however an event is cut into chunks: an unfinished event's bytes are appended to one
buffer, and only each new chunk (plus the byte before it, for a boundary split between two chunks) is searched;
the buffer is copied out once, when the event is complete. The line parser searches each byte for
CR and for LF at most once. ``scanned`` counts the bytes handed to the search and split primitives, so a test
can check that this stays a small multiple of the bytes fed.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["SseEvent", "SseLimitExceeded", "SseParser"]

_BOM = b"\xef\xbb\xbf"


class SseLimitExceeded(Exception):
    """A line or an event of the stream is larger than the parser may hold."""

    def __init__(self, what: str, limit: int) -> None:
        self.what = what
        self.limit = limit
        super().__init__(f"the server's event stream sent {what} over the {limit}-byte limit")


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One dispatched event: its data lines joined by LF, and its ``event`` type (None for the default)."""

    data: bytes
    event: str | None = None


class SseParser:
    """Feed it chunks; it returns the events they completed, in order."""

    __slots__ = (
        "_data",
        "_data_size",
        "_event",
        "_has_data",
        "_held",
        "_line",
        "_max_event",
        "_max_line",
        "_mixed",
        "_skip_lf",
        "_start",
        "scanned",
    )

    def __init__(self, max_event: int, max_line: int | None = None) -> None:
        if max_event < 1:
            raise ValueError("max_event must be positive")
        self._max_event = max_event
        self._max_line = max_line if max_line is not None else max_event + 64  # "data: " and a few spare bytes
        self._line = bytearray()  # the unfinished line
        self._data: list[bytes] = []
        self._data_size = 0
        self._has_data = False
        self._event: str | None = None
        self._skip_lf = False  # the last chunk ended in CR: an LF that starts the next one belongs to it
        self._start = True  # a BOM may open the stream
        # The fast path's unparsed bytes since the last event boundary (no CR in them): appended to, never re-made.
        self._held = bytearray()
        self._mixed = True  # whether the last feed's items may hold SseEvent objects (else all are data bytes)
        self.scanned = 0
        """Bytes handed to the search and split primitives so far (a measure of the parser's work)."""

    def feed(self, chunk: bytes) -> list[SseEvent]:
        return [item if type(item) is SseEvent else SseEvent(item) for item in self._feed(chunk)]  # type: ignore[arg-type]

    def feed_data(self, chunk: bytes) -> list[bytes]:
        """``feed``, giving only each event's data (all ACP uses of an event): on the fast path without an
        object per event."""
        items = self._feed(chunk)
        if self._mixed:
            return [item.data if type(item) is SseEvent else item for item in items]  # type: ignore[misc]
        return items  # type: ignore[return-value]  # all data

    def _feed(self, chunk: bytes) -> list[SseEvent | bytes]:
        self._mixed = True
        if not chunk:
            return []
        if self._start:
            if len(self._line) + len(chunk) < len(_BOM) and _BOM.startswith(bytes(self._line) + chunk):
                self._line += chunk  # too short to tell yet
                return []
            joined = bytes(self._line) + chunk
            self._line.clear()
            chunk = joined[len(_BOM) :] if joined.startswith(_BOM) else joined
            self._start = False
            if not chunk:
                return []
        self.scanned += len(chunk)
        if b"\r" not in chunk and not (self._has_data or self._line or self._skip_lf or self._event is not None):
            return self._feed_fast(chunk)
        if self._held:  # leaving the fast path: its held bytes start at an event boundary
            chunk = self._take_held(chunk)
        return self._feed_lines(chunk)  # type: ignore[return-value]  # list is invariant

    def _take_held(self, chunk: bytes) -> bytes:
        """The held bytes with ``chunk`` after them, as one ``bytes``; nothing is held any more."""
        self._held += chunk
        joined = bytes(self._held)
        self._held = bytearray()
        return joined

    def _feed_fast(self, chunk: bytes) -> list[SseEvent | bytes]:
        """LF-only input between events: whole events split off at once; an event of one ``data: `` line (what
        servers send) is taken as its data bytes, anything else goes through the line parser (``_mixed``)."""
        held = self._held
        if held:
            # Only the new bytes can hold the boundary that ends the held event, or its second LF.
            if held[-1] == 0x0A and chunk[:1] == b"\n":
                self.scanned += 1
                first, chunk = bytes(held[:-1]), chunk[1:]
            else:
                at = chunk.find(b"\n\n")
                self.scanned += len(chunk) if at < 0 else at + 2
                if at < 0:
                    return self._hold_more(chunk)
                held += chunk[:at]
                first, chunk = bytes(held), chunk[at + 2 :]
            self._held = bytearray()
            self.scanned += len(first)  # its search below
            blocks = chunk.split(b"\n\n")
            blocks[0:0] = [first]
        else:
            blocks = chunk.split(b"\n\n")
        self.scanned += 2 * len(chunk)  # the split, and each block's search below (disjoint parts of the chunk)
        rest = blocks.pop()
        items: list[SseEvent | bytes] = []
        mixed = False
        max_event = self._max_event
        for block in blocks:
            if block[:6] == b"data: " and block.find(b"\n") < 0:
                if len(block) - 6 > max_event:
                    raise SseLimitExceeded("an event", max_event)
                items.append(block[6:])
            elif block:
                items += self._feed_lines(block + b"\n\n")
                mixed = True
        self._mixed = mixed
        if rest:
            if len(rest) > self._max_line:
                items += self._too_long(rest)
                self._mixed = True
            else:
                self._held += rest
        return items

    def _hold_more(self, chunk: bytes) -> list[SseEvent | bytes]:
        """A chunk that completes no event: held, unless the event grew past a line's limit."""
        if len(self._held) + len(chunk) <= self._max_line:
            self._held += chunk
            return []
        return self._too_long(self._take_held(chunk))

    def _too_long(self, raw: bytes) -> list[SseEvent | bytes]:
        """An unfinished event longer than a line may be: one line (an error), or several, which the line parser
        takes from here on (it bounds each line and the event's data on their own)."""
        self.scanned += len(raw)
        if raw.find(b"\n") < 0:
            raise SseLimitExceeded("a line", self._max_line)
        return self._feed_lines(raw)  # type: ignore[return-value]  # list is invariant

    def _feed_lines(self, chunk: bytes) -> list[SseEvent]:
        """The general parser: line by line, any line ending, state kept between chunks. Each byte is searched
        once for CR and once for LF: a found position is kept until the parser passes it."""
        if self._skip_lf and chunk[:1] == b"\n":
            chunk = chunk[1:]
        self._skip_lf = False
        events: list[SseEvent] = []
        position = 0
        end = len(chunk)
        cr = lf = -2  # -2: not searched yet; -1: none left in the chunk
        scanned = 0
        while position < end:
            if cr != -1 and cr < position:
                cr = chunk.find(b"\r", position)
                scanned += (cr + 1 if cr >= 0 else end) - position
            if lf != -1 and lf < position:
                lf = chunk.find(b"\n", position)
                scanned += (lf + 1 if lf >= 0 else end) - position
            if cr < 0 and lf < 0:
                self._hold(chunk, position, end)
                break
            stop = lf if cr < 0 or (0 <= lf < cr) else cr
            self._hold(chunk, position, stop)
            line = bytes(self._line)
            self._line.clear()
            position = stop + 1
            if chunk[stop] == 0x0D:  # CR: a following LF is part of the same line ending
                if position < end:
                    if chunk[position] == 0x0A:
                        position += 1
                else:
                    self._skip_lf = True
            event = self._line_done(line)
            if event is not None:
                events.append(event)
        self.scanned += scanned
        return events

    def _hold(self, chunk: bytes, start: int, stop: int) -> None:
        if len(self._line) + stop - start > self._max_line:
            raise SseLimitExceeded("a line", self._max_line)
        self._line += chunk[start:stop]

    def _line_done(self, line: bytes) -> SseEvent | None:
        if not line:
            return self._dispatch()
        if line[:1] == b":":
            return None  # a comment (keep-alive)
        colon = line.find(b":")
        self.scanned += colon + 1 if colon >= 0 else len(line)
        if colon < 0:
            name, value = line, b""
        else:
            name, value = line[:colon], line[colon + 1 :]
            if value[:1] == b" ":
                value = value[1:]
        if name == b"data":
            added = len(value) + (1 if self._has_data else 0)
            if self._data_size + added > self._max_event:
                raise SseLimitExceeded("an event", self._max_event)
            if self._has_data:
                self._data.append(b"\n")
            self._data.append(value)
            self._data_size += added
            self._has_data = True
        elif name == b"event":
            self._event = value.decode("utf-8", "replace")
        return None  # id, retry and unknown fields mean nothing to ACP

    def _dispatch(self) -> SseEvent | None:
        if not self._has_data:
            self._event = None
            return None
        data = b"".join(self._data) if len(self._data) != 1 else self._data[0]
        event = SseEvent(data, self._event)
        self._data = []
        self._data_size = 0
        self._has_data = False
        self._event = None
        return event

    def feed_eof(self) -> list[SseEvent]:
        """The stream ended: an unfinished event is dropped, as the SSE rules say."""
        self._held = bytearray()
        self._line.clear()
        self._data = []
        self._data_size = 0
        self._has_data = False
        return []
