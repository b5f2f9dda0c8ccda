"""Session-level streams of a ``Conversation``: ``receive_steps()`` and ``receive_chunks()``.

The fold feeds them synchronously, in the connection's reader; consumers read them asynchronously, any
number at once, each with its own bounded buffer. A stream sees everything folded while it is open, turn
or no turn: work reported between prompts, background work, messages the agent sends on its own, replays.

* ``receive_steps()`` yields one ``Step`` per fold event (what ``SessionState.apply`` returned for each
  update, in order, plus the conversation's local edits: tool calls marked cancelled by ``cancel()``, the
  option list a ``set_config_option`` answer carries, the lists a resume answer carries).
* ``receive_chunks()`` yields what the agent shows the user: ``ThoughtChunk`` / ``TextChunk`` fragments of
  its thought and agent messages (consecutive fragments of one message merged while they wait), and one
  ``ToolCallChunk`` per tool call, when it first appears. User messages, plans, terminals, compactions,
  state and every other session-level update are not chunks; a replay is not either (see ``_Hub.event``), but
  what a reconnect's replay brought that the stream had not been shown is (``replayed=True``).

Falling behind: a stream holds at most ``max_buffer`` items (merged fragments count once). What happens to
the items that do not fit is the stream's ``overflow`` policy, chosen when it is opened:

* ``"mark"`` (default): they are dropped and counted, and a ``StreamOverflow(dropped=n)`` marker takes their
  place in the stream, so the consumer sees exactly where the gap is and how large it was (the state is
  authoritative: re-read ``history()`` there). Items that fit later are delivered after the marker.
* ``"error"``: the stream stops receiving; the consumer gets the items already buffered, then
  ``StreamOverflowError`` is raised.

Nothing is ever dropped silently, and a slow consumer never slows the fold or the other consumers.

A stream ends (``StopAsyncIteration``, after its buffered items) on ``Conversation.disconnect()`` or when
closed (``close()``, ``aclose()``, leaving ``async with``); when the connection is lost it raises
``ConnectionClosed`` after its buffered items. One opened after the loss waits for ``reconnect()`` (and sees
its replay).

With a reconnect policy (``ClientBuilder.reconnect``) a lost connection does not end the streams: once it is
back, each open stream gets a ``StreamReconnected`` marker, then what it missed while away, once, marked
``replayed`` (computed from the agent's replay against what it had been shown: ``catch_up.py``), then the live
items again; nothing it already had comes twice. It raises ``SessionLost`` when the agent lost the session and
``ReconnectFailed`` when the policy gave up, after its buffered items, as ``chat()``'s turns end.

Cost: with no stream open the fold pays nothing. ``Conversation._streams`` is None, ``_on_note`` calls the
state's own ``apply``, and ``_on_notes`` reads that one attribute per run of updates. With streams open the
hub's ``apply`` wraps the state's, and a run of chunks of one message is handed over once, as the slice of
blocks it appended, whatever its length; it becomes one ``Step`` per chunk (or one merged fragment) only
when a consumer reads it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar

from acp_session.conversation.content import text_of
from acp_session.conversation.entities import Message, TimelineEntry
from acp_session.conversation.events import (
    MessageChanged,
    StateEvent,
    ToolCallChanged,
)
from acp_session.conversation.stream_items import (
    Step,
    StreamChunk,
    StreamOverflow,
    StreamOverflowError,
    StreamReconnected,
    TextChunk,
    ThoughtChunk,
    ToolCallChunk,
    entry_of,
)
from acp_session.interactions import ReaderMark
from acp_session.schema import ContentBlock, TextContent
from acp_session.transport.backend import Flag, current_backend

if TYPE_CHECKING:
    from acp_session.conversation.conversation import Conversation

__all__ = [
    "DEFAULT_STREAM_BUFFER",
    "ChunkStream",
    "OverflowPolicy",
    "Step",
    "StepStream",
    "StreamChunk",
    "StreamOverflow",
    "StreamOverflowError",
    "StreamReconnected",
    "TextChunk",
    "ThoughtChunk",
    "ToolCallChunk",
    "entry_of",
]

DEFAULT_STREAM_BUFFER = 1024
"""Items a stream holds for its consumer by default (merged fragments count once)."""

OverflowPolicy = Literal["mark", "error"]

T = TypeVar("T")


# ---------------------------------------------------------------------------------------------- buffer items


class _Gap:
    """Items dropped here (``"mark"`` policy); becomes a ``StreamOverflow``."""

    __slots__ = ("dropped",)

    def __init__(self, dropped: int) -> None:
        self.dropped = dropped


class _Run:
    """Runs of chunks appended to one message, kept as the block lists the fold handed over (shared by every
    stream, never changed); one ``Step`` per block when read."""

    __slots__ = ("index", "message", "runs")

    def __init__(self, message: Message, blocks: list[ContentBlock], index: int) -> None:
        self.message = message
        self.runs = [blocks]
        self.index = index


class _Fragments:
    """Queued text of one message (strings, or block lists from runs), joined when read."""

    __slots__ = ("cls", "index", "message_id", "parts", "replayed")

    def __init__(
        self,
        cls: type[TextChunk] | type[ThoughtChunk],
        message_id: str,
        index: int,
        part: str | list[Any],
        replayed: bool = False,
    ) -> None:
        self.cls = cls
        self.message_id = message_id
        self.index = index
        self.parts = [part]
        self.replayed = replayed


# ---------------------------------------------------------------------------------------------- streams


class _Stream(Generic[T]):
    """One consumer's subscription: an async iterator with a bounded buffer (see the module docstring)."""

    def __init__(self, hub: _Hub, max_buffer: int, overflow: OverflowPolicy) -> None:
        if max_buffer < 1:
            raise ValueError("max_buffer must be at least 1")
        if overflow not in ("mark", "error"):
            raise ValueError("overflow must be 'mark' or 'error'")
        self.max_buffer = max_buffer
        self.overflow: OverflowPolicy = overflow
        self.dropped = 0
        """Updates whose items were dropped so far because the buffer was full (all markers together)."""
        self._hub: _Hub | None = hub
        self._queue: deque[Any] = deque()
        self._wake: Flag | None = None
        self._new_flag: Callable[[], Flag] | None = None
        self._expanding: Iterator[T] | None = None
        self._failed = False  # "error" policy: it overflowed and receives nothing more
        self._ended = False
        self._error: BaseException | None = None
        self._popped = 0  # buffered items taken out (``_reader_mark``)
        self._done = 0  # of them, those wholly read: the consumer came back for more after them
        self._asked = 0  # calls of __anext__

    def __repr__(self) -> str:
        state = "closed" if self._hub is None and not self._queue else "open"
        return f"<{type(self).__name__} {state} buffered={len(self._queue)} dropped={self.dropped}>"

    @property
    def closed(self) -> bool:
        """True once the stream receives nothing more (closed, ended, or overflowed under ``"error"``)."""
        return self._hub is None or self._failed

    # -- fed by the hub (sync, in the reader)

    def _put(self, item: Any) -> None:
        queue = self._queue
        if len(queue) < self.max_buffer:
            queue.append(item)
            self._notify()
        else:
            self._drop(1)

    def _drop(self, count: int) -> None:
        self.dropped += count
        if self.overflow == "error":
            self._failed = True
            hub = self._hub
            if hub is not None:
                hub.remove(self)
        else:
            queue = self._queue
            tail = queue[-1] if queue else None
            if type(tail) is _Gap:
                tail.dropped += count
            else:
                queue.append(_Gap(count))  # the one slot beyond max_buffer: where the gap is
        self._notify()

    def _notify(self) -> None:
        wake = self._wake
        if wake is not None:
            self._wake = None
            wake.set()

    def _end(self, error: BaseException | None) -> None:
        """No more items: the consumer gets what is buffered, then the end (or ``error`` raised)."""
        self._hub = None
        self._ended = True
        self._error = error
        self._notify()

    def _convert(self, item: Any) -> Any:
        """A buffered item as the consumer sees it; None to skip it (it may start ``_expanding``)."""
        raise NotImplementedError

    # -- read by the consumer (async)

    def __aiter__(self) -> _Stream[T]:
        return self

    def _reader_mark(self) -> ReaderMark | None:
        """Where this stream's consumer stands, for an interactive request that came now (``interactions.py``):
        reached once it read every item buffered now and came back for more. None when nothing is left to read."""
        target = self._popped + len(self._queue)
        if self._done >= target:
            return None
        return ReaderMark(lambda: self._done >= target or (self.closed and not self._queue), self._moved)

    def _moved(self) -> int:
        return self._popped + self._asked

    async def __anext__(self) -> T | StreamOverflow | StreamReconnected:
        queue = self._queue
        self._asked += 1
        self._done = self._popped if self._expanding is None else self._popped - 1
        while True:
            expanding = self._expanding
            if expanding is not None:
                for item in expanding:
                    return item
                self._expanding = None
            if queue:
                self._popped += 1
                found = self._convert(queue.popleft())
                if found is not None:
                    return found  # type: ignore[no-any-return]
                continue
            if self._failed:
                self._failed = False
                dropped = self.dropped
                self._end(None)
                raise StreamOverflowError(dropped, self.max_buffer)
            if self._ended:
                error, self._error = self._error, None
                if error is not None:
                    raise error
                raise StopAsyncIteration
            new_flag = self._new_flag
            if new_flag is None:  # the backend's flag class, looked up once (see ChatTurn._events)
                new_flag = self._new_flag = current_backend().new_flag
            self._done = self._popped  # all read: waiting for more
            wake = self._wake = new_flag()
            await wake.wait()

    def close(self) -> None:
        """Stop receiving and drop what is buffered; iterating ends at once. Idempotent."""
        hub = self._hub
        if hub is not None:
            hub.remove(self)
        self._queue.clear()
        self._expanding = None
        self._failed = False
        self._end(None)

    async def aclose(self) -> None:
        self.close()

    async def __aenter__(self) -> _Stream[T]:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


class StepStream(_Stream[Step]):
    """``Conversation.receive_steps()``: one ``Step`` per fold event, or a ``StreamOverflow`` marker."""

    def _run(self, message: Message, blocks: list[ContentBlock], index: int) -> None:
        queue = self._queue
        if queue:
            tail = queue[-1]
            if type(tail) is _Run and tail.message is message:
                tail.runs.append(blocks)
                return
        if len(queue) < self.max_buffer:
            queue.append(_Run(message, blocks, index))
            self._notify()
        else:
            self._drop(len(blocks))

    def _convert(self, item: Any) -> Any:
        kind = type(item)
        if kind is Step:
            return item
        if kind is _Run:
            self._expanding = _expand(item)
            return None
        if kind is _Gap:
            return StreamOverflow(item.dropped)
        return item  # a StreamReconnected marker

    async def __aenter__(self) -> StepStream:
        return self


class ChunkStream(_Stream[StreamChunk]):
    """``Conversation.receive_chunks()``: ``ThoughtChunk``, ``TextChunk``, ``ToolCallChunk``, or a
    ``StreamOverflow`` marker."""

    def _fragment(
        self,
        cls: type[TextChunk] | type[ThoughtChunk],
        message_id: str,
        index: int,
        part: str | list[Any],
        replayed: bool = False,
    ) -> None:
        queue = self._queue
        if queue:
            tail = queue[-1]
            if (
                type(tail) is _Fragments
                and tail.cls is cls
                and tail.message_id == message_id
                and tail.replayed is replayed
            ):
                tail.parts.append(part)
                return
        if len(queue) < self.max_buffer:
            queue.append(_Fragments(cls, message_id, index, part, replayed))
            self._notify()
        else:
            self._drop(len(part) if type(part) is list else 1)  # counted in updates, as the steps are

    def _convert(self, item: Any) -> Any:
        kind = type(item)
        if kind is _Fragments:
            parts = item.parts
            text = "".join([part if type(part) is str else text_of(part) for part in parts])
            return item.cls(text, item.message_id, item.index, replayed=item.replayed) if text else None
        if kind is _Gap:
            return StreamOverflow(item.dropped)
        return item

    async def __aenter__(self) -> ChunkStream:
        return self


def _expand(run: _Run) -> Iterator[Step]:
    message, index = run.message, run.index
    for blocks in run.runs:
        for block in blocks:
            yield Step(MessageChanged(message, False, block), index)


# ---------------------------------------------------------------------------------------------- the hub


class _Hub:
    """The open streams of one conversation, and what feeds them (installed while any is open)."""

    def __init__(self, conversation: Conversation) -> None:
        self._conversation = conversation
        self._state = conversation.state
        self._steps: tuple[StepStream, ...] = ()
        self._chunks: tuple[ChunkStream, ...] = ()

    def add(self, stream: _Stream[Any]) -> None:
        if isinstance(stream, StepStream):
            self._steps += (stream,)
        elif isinstance(stream, ChunkStream):
            self._chunks += (stream,)
        conversation = self._conversation
        if conversation._streams is not self:
            conversation._streams = self
            conversation._apply = self.apply

    def remove(self, stream: _Stream[Any]) -> None:
        self._steps = tuple(s for s in self._steps if s is not stream)
        self._chunks = tuple(s for s in self._chunks if s is not stream)
        if not self._steps and not self._chunks:
            self._uninstall()

    def _uninstall(self) -> None:
        conversation = self._conversation
        if conversation._streams is self:
            conversation._streams = None
            conversation._apply = conversation.state.apply

    def end(self, error: BaseException | None) -> None:
        """End every open stream (after its buffered items), with ``error`` raised when given."""
        streams: tuple[_Stream[Any], ...] = (*self._steps, *self._chunks)
        self._steps = self._chunks = ()
        self._uninstall()
        for stream in streams:
            stream._end(error)

    # -- feeding (sync, in the reader)

    def apply(self, update: Any) -> StateEvent:
        """``SessionState.apply`` that also feeds the streams (``Conversation._apply`` while any is open)."""
        event = self._state.apply(update)
        self.event(event)
        return event

    def _index(self, entry: TimelineEntry) -> int:
        """``entry``'s index in ``history()`` now (which hides the trimming slack), or -1."""
        position = entry.position
        limit = self._conversation.max_history_size
        if limit and position >= 0:
            excess = len(self._state.timeline) - limit
            if excess > 0:
                position -= excess
        return position if position >= 0 else -1

    def caught_up(self, marker: StreamReconnected, events: list[StateEvent]) -> None:
        """After a reconnect: the marker, then what the streams missed while away (``catch_up.missed``), marked
        ``replayed``; chunks too (unlike a replay, it is what they were not shown)."""
        streams: tuple[_Stream[Any], ...] = (*self._steps, *self._chunks)
        for stream in streams:
            stream._put(marker)
        for event in events:
            self.event(event, True)

    def event(self, event: StateEvent, caught_up: bool = False) -> None:
        """One fold event. Chunks skip a replay: it re-sends what was already shown (a consumer that was there
        saw it; one that was not reads ``history()``); ``receive_steps()`` shows it, marked ``replayed``.
        ``caught_up``: missed while the connection was down (``caught_up()``), for the chunks as well."""
        entry = entry_of(event)
        index = -1 if entry is None else self._index(entry)
        replaying = self._state.replaying
        steps = self._steps
        if steps:
            step = Step(event, index, replaying or caught_up)
            for stream in steps:
                stream._put(step)
        chunks = self._chunks
        if not chunks or replaying:
            return
        kind = type(event)
        if kind is MessageChanged:
            assert isinstance(event, MessageChanged)
            message = event.message
            role = message.role
            if role == "user":
                return
            cls = TextChunk if role == "agent" else ThoughtChunk
            appended = event.appended
            if appended is not None:
                if type(appended) is TextContent and appended.text:
                    for consumer in chunks:
                        consumer._fragment(cls, message.message_id, index, appended.text, caught_up)
            elif event.created:
                text = message.text
                if text:
                    for consumer in chunks:
                        consumer._fragment(cls, message.message_id, index, text, caught_up)
            else:
                replaced = cls(message.text, message.message_id, index, True, caught_up)
                for consumer in chunks:
                    consumer._put(replaced)
        elif kind is ToolCallChanged:
            assert isinstance(event, ToolCallChanged)
            if event.created:
                found = ToolCallChunk(event.tool_call, index, caught_up)
                for consumer in chunks:
                    consumer._put(found)

    def reader_marks(self) -> list[ReaderMark]:
        """Where each open stream's consumer stands (``_Stream._reader_mark``)."""
        streams: tuple[_Stream[Any], ...] = (*self._steps, *self._chunks)
        return [mark for mark in map(_Stream._reader_mark, streams) if mark is not None]

    def chunk_run(self, message: Message, blocks: list[ContentBlock]) -> None:
        """``Conversation._on_notes`` folded ``blocks`` into ``message`` as a run of chunks (one call per run)."""
        if not blocks:
            return
        index = self._index(message)
        for stream in self._steps:
            stream._run(message, blocks, index)
        chunks = self._chunks
        if chunks and message.role != "user":
            cls = TextChunk if message.role == "agent" else ThoughtChunk
            for consumer in chunks:
                consumer._fragment(cls, message.message_id, index, blocks)


S = TypeVar("S", StepStream, ChunkStream)


def open_stream(conversation: Conversation, stream_type: type[S], max_buffer: int, overflow: OverflowPolicy) -> S:
    """Subscribe a new stream of ``stream_type`` to ``conversation`` (it sees everything folded from now on)."""
    hub = conversation._streams
    if hub is None:
        hub = _Hub(conversation)
    stream = stream_type(hub, max_buffer, overflow)
    if conversation._disconnected:
        stream._end(None)  # nothing more will come
    else:
        hub.add(stream)
    return stream
