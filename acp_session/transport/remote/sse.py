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

In bulk: what servers send is LF-only events of one ``data: `` line each. A read's complete events are checked for
that form with two C-level passes (their LFs counted, and split at each ``\n\ndata: ``) instead of a Python step
per event, and ``feed_runs`` hands a run of at least ``RUN_EVENTS`` of them over as one ``EventRun`` (their data
joined by LF), which the transport can give the rpc layer as one block, as the stdio reader gives a pipe read.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RUN_EVENTS", "EventRun", "SseEvent", "SseLimitExceeded", "SseParser"]

_BOM = b"\xef\xbb\xbf"
_DATA = b"data: "
_NEXT_DATA = b"\n\ndata: "  # an event's end, and the next event's one data line
RUN_EVENTS = 4
"""A read's single-line events come over as one ``EventRun`` when there are at least this many (as ``LineBlock``
on stdio: a trickle gains nothing from it)."""


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


class EventRun:
    """``count`` consecutive events of one ``data:`` line each: their data, each followed by an LF (no data holds an
    LF or a CR, so the LFs are exactly the ends). Not checked for UTF-8: the transport does that, once for all."""

    __slots__ = ("count", "data")

    def __init__(self, data: bytes, count: int) -> None:
        self.data = data
        self.count = count

    def events(self) -> list[bytes]:
        """Each event's data."""
        events = self.data.split(b"\n")
        events.pop()  # after the last LF: empty
        return events

    def __repr__(self) -> str:
        return f"EventRun({self.count} events, {len(self.data)} bytes)"


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
        "_runs",
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
        self._runs = False  # whether the last feed's items may hold EventRun objects
        self.scanned = 0
        """Bytes handed to the search and split primitives so far (a measure of the parser's work)."""

    def feed(self, chunk: bytes) -> list[SseEvent]:
        return [SseEvent(data) if type(data) is bytes else data for data in self._expanded(self._feed(chunk))]  # type: ignore[misc]

    def feed_data(self, chunk: bytes) -> list[bytes]:
        """``feed``, giving only each event's data (all ACP uses of an event): on the fast path without an
        object per event."""
        items = self._expanded(self._feed(chunk))
        if self._mixed:
            return [item.data if type(item) is SseEvent else item for item in items]  # type: ignore[misc]
        return items  # type: ignore[return-value]  # all data

    def feed_runs(self, chunk: bytes) -> list[bytes | EventRun]:
        """``feed_data``, with a run of single-line events kept as one ``EventRun`` (the same data, in order)."""
        items = self._feed(chunk)
        if self._mixed:
            return [item.data if type(item) is SseEvent else item for item in items]  # type: ignore[misc]
        return items  # type: ignore[return-value]  # data and runs

    def _expanded(self, items: list[SseEvent | bytes | EventRun]) -> list[SseEvent | bytes]:
        if not self._runs:
            return items  # type: ignore[return-value]  # no run among them
        out: list[SseEvent | bytes] = []
        for item in items:
            if type(item) is EventRun:
                out += item.events()
            else:
                out.append(item)  # type: ignore[arg-type]  # not a run
        return out

    def _feed(self, chunk: bytes) -> list[SseEvent | bytes | EventRun]:
        self._mixed = True
        self._runs = False
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

    def _feed_fast(self, chunk: bytes) -> list[SseEvent | bytes | EventRun]:
        """LF-only input between events: whole events split off at once; an event of one ``data: `` line (what
        servers send) is taken as its data bytes, anything else goes through the line parser (``_mixed``)."""
        held = self._held
        items: list[SseEvent | bytes | EventRun] = []
        mixed = False
        if held:
            # Only the new bytes can hold the boundary that ends the held event, or its second LF.
            if held[-1] == 0x0A and chunk[:1] == b"\n":
                self.scanned += 1
                first, chunk = bytes(held[:-1]), chunk[1:]
            else:
                at = chunk.find(b"\n\n")
                self.scanned += len(chunk) if at < 0 else at + 2
                if at < 0:
                    return self._hold_more(chunk)  # type: ignore[return-value]  # list is invariant
                held += chunk[:at]
                first, chunk = bytes(held), chunk[at + 2 :]
            self._held = bytearray()
            self.scanned += len(first)  # its search below
            mixed = self._take_blocks([first, b""], items)
        end = chunk.rfind(b"\n\n")  # the last complete event's end: little to search from the back
        self.scanned += len(chunk) - end if end >= 0 else len(chunk)
        if end < 0:
            rest = chunk
        else:
            rest = chunk[end + 2 :]
            mixed = self._take_events(chunk[: end + 2] if rest else chunk, items) or mixed
        self._mixed = mixed
        if rest:
            if len(rest) > self._max_line:
                items += self._too_long(rest)
                self._mixed = True
            else:
                self._held += rest
        return items

    def _take_events(self, events: bytes, items: list[SseEvent | bytes | EventRun]) -> bool:
        """``events`` (whole LF-only events, from an event boundary to one) into ``items``; True if the line parser
        took some of them. When every event is one ``data: `` line, two C-level passes find that out and take
        them all (as one ``EventRun`` when there are ``RUN_EVENTS`` or more); otherwise event by event."""
        if events[:6] == _DATA and len(events) - 8 <= self._max_event:
            lfs = len(events) - len(events.replace(b"\n", b""))
            parts = events.split(_NEXT_DATA)
            self.scanned += 2 * len(events)
            if lfs == 2 * len(parts):  # the LFs are exactly the events' ends: each event is one data line
                if len(parts) >= RUN_EVENTS:
                    parts[0] = parts[0][6:]
                    parts[-1] = parts[-1][:-1]  # each data ends with one LF
                    items.append(EventRun(b"\n".join(parts), len(parts)))
                    self._runs = True
                    return False
                parts[0] = parts[0][6:]
                parts[-1] = parts[-1][:-2]
                items += parts
                return False
        blocks = events.split(b"\n\n")
        self.scanned += 2 * len(events)  # the split, and each block's search (disjoint parts of the chunk)
        return self._take_blocks(blocks, items)

    def _take_blocks(self, blocks: list[bytes], items: list[SseEvent | bytes | EventRun]) -> bool:
        """Events split at their ``\n\n`` (the last block is what follows the last one, ignored) into ``items``;
        True if the line parser took some of them."""
        mixed = False
        max_event = self._max_event
        for block in blocks[:-1]:
            if block[:6] == _DATA and block.find(b"\n") < 0:
                if len(block) - 6 > max_event:
                    raise SseLimitExceeded("an event", max_event)
                items.append(block[6:])
            elif block:
                items += self._feed_lines(block + b"\n\n")
                mixed = True
        return mixed

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
