"""What the session-level streams yield (``receive_steps()``, ``receive_chunks()``: ``streams.py``): the item
types, their markers and errors, and ``entry_of``. Kept apart from the streams' machinery, which imports them."""

from __future__ import annotations

from typing import ClassVar

import msgspec

from acp_session.conversation.entities import TimelineEntry, ToolCall
from acp_session.conversation.events import (
    CompactionChanged,
    MessageChanged,
    PlanChanged,
    StateEvent,
    ToolCallChanged,
    UnknownUpdate,
)
from acp_session.errors import AcpError

__all__ = [
    "Step",
    "StreamChunk",
    "StreamOverflow",
    "StreamOverflowError",
    "StreamReconnected",
    "TextChunk",
    "ThoughtChunk",
    "ToolCallChunk",
    "entry_of",
]


class Step(msgspec.Struct, frozen=True, gc=False):
    """One fold event as ``receive_steps()`` yields it.

    ``event`` is what the fold reported (it points at the live entity: read it when handling the step).
    ``index`` is where its history entry stood in ``history()`` when it was folded (later trimming shifts
    indices, as it does ``turn_start_indices``); -1 for events without one (state, usage, terminals,
    commands, config options, session info, notices, a removed plan). ``replayed``: folded inside a resume
    with replay, where the agent re-sends history (the resume's state snapshot included).
    """

    kind: ClassVar[str] = "step"
    event: StateEvent
    index: int = -1
    replayed: bool = False

    @property
    def entry(self) -> TimelineEntry | None:
        """The history entry the event touched, if any."""
        return entry_of(self.event)


class StreamChunk(msgspec.Struct, frozen=True, gc=False):
    """Base of what ``receive_chunks()`` yields (besides ``StreamOverflow``)."""

    kind: ClassVar[str] = ""


class ThoughtChunk(StreamChunk, frozen=True):
    """A fragment of the agent's reasoning; append it. ``replaced``: the message was rewritten, ``text`` is
    all of it. ``step_index``: the message's index in ``history()`` when folded. ``replayed``: what came while
    the connection was down, caught up after a reconnect (after ``StreamReconnected``)."""

    kind: ClassVar[str] = "thought"
    text: str
    message_id: str
    step_index: int = -1
    replaced: bool = False
    replayed: bool = False


class TextChunk(StreamChunk, frozen=True):
    """A fragment of a reply to the user; append it. ``replaced``, ``step_index``, ``replayed``: see
    ``ThoughtChunk``."""

    kind: ClassVar[str] = "text"
    text: str
    message_id: str
    step_index: int = -1
    replaced: bool = False
    replayed: bool = False


class ToolCallChunk(StreamChunk, frozen=True):
    """A tool call appeared (once per tool call id while it is in history). ``tool_call`` is the live entity:
    later updates patch it; ``receive_steps()`` shows each of them. ``replayed``: it appeared while the connection
    was down (see ``ThoughtChunk``)."""

    kind: ClassVar[str] = "tool_call"
    tool_call: ToolCall
    step_index: int = -1
    replayed: bool = False


class StreamOverflow(msgspec.Struct, frozen=True, gc=False):
    """Where a stream with the ``"mark"`` policy lost items: what ``dropped`` updates gave (their steps, or their
    chunks: a text fragment that would have merged into a lost one counts too) did not fit in its buffer."""

    kind: ClassVar[str] = "overflow"
    dropped: int


class StreamReconnected(msgspec.Struct, frozen=True, gc=False):
    """The connection was lost and came back (reconnect attempt ``attempt``; ``ClientBuilder.reconnect``). What
    follows, marked ``replayed``, is what the stream missed meanwhile, once: one step per entity the agent created
    or changed while away (history order; the updates themselves are not known, only their result), then the
    session-level values that changed; chunks as live (the missed text of each message, new tool calls). Then the
    live items go on. ``forgotten``: entries of ``history()`` the stream had been shown that the agent's history no
    longer holds (a restarted agent lost them; they are gone from ``history()`` too). Notices sent while away are
    lost (they are never stored)."""

    kind: ClassVar[str] = "reconnected"
    attempt: int
    forgotten: int = 0


class StreamOverflowError(AcpError):
    """A stream with the ``"error"`` policy fell behind: raised after the items it had buffered."""

    def __init__(self, dropped: int, max_buffer: int) -> None:
        self.dropped = dropped
        self.max_buffer = max_buffer
        super().__init__(f"the consumer fell behind: {dropped} item(s) did not fit in its buffer of {max_buffer}")


def entry_of(event: StateEvent) -> TimelineEntry | None:
    """The history entry a fold event touched (None for session-level events and a removed plan)."""
    kind = type(event)
    if kind is MessageChanged:
        assert isinstance(event, MessageChanged)
        return event.message
    if kind is ToolCallChanged:
        assert isinstance(event, ToolCallChanged)
        return event.tool_call
    if kind is PlanChanged:
        assert isinstance(event, PlanChanged)
        return None if event.removed else event.plan
    if kind is CompactionChanged:
        assert isinstance(event, CompactionChanged)
        return event.compaction
    if kind is UnknownUpdate:
        assert isinstance(event, UnknownUpdate)
        return event.entry
    return None
