"""How ``Conversation`` routes each fold event to the chat turn that owns it (a base class of it, kept apart for
size; the rules are in conversation.py's module docstring): the turns waiting for their insertion, the segments
held behind an unclaimed user message, the started turns, and each turn's end.

``Conversation.__init__`` sets every attribute read here; the annotations name them for the type checker.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import anyio

from acp_session.conversation.chat_events import ChatFile
from acp_session.conversation.entities import Message
from acp_session.conversation.events import MessageChanged, StateChanged, StateEvent, ToolCallChanged
from acp_session.conversation.turn import ChatTurn
from acp_session.conversation.view import ConversationFields
from acp_session.errors import AcpError
from acp_session.interactions import ReaderMark
from acp_session.schema import (
    BackgroundToolCall,
    ContentBlock,
)

if TYPE_CHECKING:
    from acp_session.session import TrackedPrompt


__all__ = ["Segment", "TurnRouting"]


class Segment:
    """Events after a user message no answer has claimed yet, or (``message_id`` None) events that came
    before anything named the turn they belong to (see the module docstring)."""

    __slots__ = ("events", "message_id", "owner")

    def __init__(self, message_id: str | None, owner: ChatTurn | None) -> None:
        self.message_id = message_id
        self.owner = owner
        self.events: list[StateEvent | ChatFile] = []

    def feed(self, event: StateEvent | ChatFile) -> None:
        self.events.append(event)

    feed_message = feed

    def feed_run(self, message: Message, blocks: list[ContentBlock]) -> None:
        self.events.extend([MessageChanged(message, False, block) for block in blocks])


class TurnRouting(ConversationFields):
    """The routing half of ``Conversation``."""

    def _route(self, event: StateEvent) -> None:
        kind = type(event)
        if kind is MessageChanged:
            assert isinstance(event, MessageChanged)
            if event.created:
                message = event.message
                self._times[(message.role, message.message_id)] = time.time()
                if message.role == "user":
                    self._turns_total += 1
                    self._user_message(message.message_id)
                self._trim()
        elif kind is ToolCallChanged:
            assert isinstance(event, ToolCallChanged)
            if event.tool_call.tool_call_id in self._background:
                return
            if event.created:
                self._trim()
        elif kind is StateChanged:
            assert isinstance(event, StateChanged)
            self._on_state(event)
            return
        elif getattr(event, "created", False):
            self._trim()
        receiver = self._receiver
        if receiver is None:
            receiver = self._hold_for_answer()
        if receiver is not None:
            receiver.feed(event)

    def _on_state(self, event: StateChanged) -> None:
        background = event.background
        if background is not None:
            self._background = frozenset(
                item.tool_call_id for item in background if isinstance(item, BackgroundToolCall)
            )
            for turn in self._active:
                turn.end_tools(self._background)
        if not self._segments and not self._active:
            self._hold_for_answer()
        if self._segments:
            self._segments[-1].feed(event)
        elif event.completed and self._active:
            finished, self._active = self._active, []
            for index, turn in enumerate(finished):
                last = index == len(finished) - 1
                self._last_response = turn.finish(event if last else _without_usage(event))
            self._receiver = None
        self._update_idle()

    def _user_message(self, message_id: str) -> None:
        owner = next((t for t in self._awaiting if message_id in (t.message_id, t.known_message_id)), None)
        if owner is None and not self._awaiting and not self._segments:
            return  # nobody's prompt of ours is unanswered: someone else's message
        held = self._segments[-1] if self._segments else None
        if held is not None and held.message_id is None:
            # The work held before anything named its turn is this user message's turn.
            held.message_id = message_id
            if owner is not None:
                self._hold(owner, held)
            self._drain()
            return
        if owner is not None and not self._segments:
            self._awaiting.remove(owner)
            self._start(owner, message_id)
            return
        segment = Segment(message_id, None)
        if owner is not None:
            self._hold(owner, segment)
        self._segments.append(segment)
        self._receiver = segment
        self._drain()

    def _hold_for_answer(self) -> Segment | None:
        """Work reported while a prompt of ours is unanswered and nothing names its turn yet (no answer, no
        user message): held, so the answer or the user message that follows claims it; None otherwise."""
        if self._segments or self._active or not any(t.known_message_id is None for t in self._awaiting):
            return None
        segment = Segment(None, None)
        self._segments.append(segment)
        self._receiver = segment
        self._update_idle()
        return segment

    def _hold(self, turn: ChatTurn, segment: Segment) -> None:
        """``turn`` (sent or accepted) owns the held ``segment``: it starts when the segment is replayed."""
        turn.advance("hold")
        self._awaiting.remove(turn)
        segment.owner = turn

    def _start(self, turn: ChatTurn, message_id: str) -> None:
        turn.start(message_id)
        self._active.append(turn)
        self._receiver = turn
        self._update_idle()

    def _on_answer(self, turn: ChatTurn, tracked: TrackedPrompt) -> None:
        """The ``session/prompt`` answer (runs in the connection's prompt-watcher task)."""
        self._answered(turn, tracked.message_id if tracked.error is None else None, tracked.error)

    def _answered(self, turn: ChatTurn, message_id: str | None, error: BaseException | None) -> None:
        if message_id is None and turn.state == "started":
            # A v1 turn starts when its prompt is sent; an error answer is how it fails.
            if turn in self._active:
                self._active.remove(turn)
            turn.fail(error or AcpError("the prompt failed"))
            if self._receiver is turn:
                self._receiver = self._active[-1] if self._active else None
            self._update_idle()
            return
        if (turn.state != "sent" and turn.state != "held") or turn.message_id is not None:
            return  # already started, ended, or answered
        if message_id is None:
            if turn in self._awaiting:
                self._awaiting.remove(turn)
            for segment in self._segments:
                if segment.owner is turn:  # named by its user message, then refused: the work is nobody's of ours
                    segment.owner = None
            turn.fail(error or AcpError("the prompt was not inserted"))
            self._drain()
            self._update_idle()
            return
        if turn.reported_start:
            turn.advance("accept")
            return  # its user message, reported when its turn starts, starts it
        turn.message_id = message_id
        for segment in self._segments if turn.state == "sent" else ():
            if segment.message_id in (message_id, None) and segment.owner is None:
                # Its user message, or (message_id None) work reported before anything named the turn.
                segment.message_id = message_id
                self._hold(turn, segment)
                self._drain()
                return
        if not self._segments:
            # Inserted: the turn starts now (its user message, when it comes, is not a new start).
            self._awaiting.remove(turn)
            self._start(turn, message_id)
        else:
            turn.advance("accept")  # starts once the segments held before it are replayed (_drain)
        self._drain()

    def _drain(self) -> None:
        """Replay held segments from the front while their owner is known (or can no longer be ours)."""
        while self._segments:
            segment = self._segments[0]
            if segment.owner is None and any(t.message_id is None for t in self._awaiting):
                self._receiver = self._segments[-1]
                return
            self._segments.pop(0)
            if segment.owner is not None:
                self._start(segment.owner, segment.message_id or "")
            else:
                self._receiver = self._active[-1] if self._active else None
            for event in segment.events:
                self._replay_event(event)
        self._receiver = self._active[-1] if self._active else None
        # A prompt answered while segments were held, whose user message is not here yet, starts now.
        for turn in [t for t in self._awaiting if t.message_id is not None]:
            self._awaiting.remove(turn)
            self._start(turn, turn.message_id or "")
        self._update_idle()

    def _replay_event(self, event: StateEvent | ChatFile) -> None:
        if type(event) is StateChanged:
            assert isinstance(event, StateChanged)
            if event.completed and self._active:
                finished, self._active = self._active, []
                for index, turn in enumerate(finished):
                    last = index == len(finished) - 1
                    self._last_response = turn.finish(event if last else _without_usage(event))
            return
        receiver = self._active[-1] if self._active else None
        if receiver is not None:
            receiver.feed(event)

    def _foreground_tool_calls(self) -> list[str]:
        """What a cancel marks ``cancelled``: the started turns' unfinished tool calls, and those reported in
        held segments (a turn whose work came before its prompt's answer claimed it); background ones never."""
        ids = [tid for turn in self._active for tid in turn.open_tool_calls]
        for segment in self._segments:
            ids += [e.tool_call.tool_call_id for e in segment.events if isinstance(e, ToolCallChanged)]
        return [tid for tid in dict.fromkeys(ids) if tid not in self._background]

    def _on_file_written(self, path: str, content: str) -> None:
        """The client wrote a file for this session's agent (v1 ``fs/write_text_file``, the provider returned):
        a ``ChatFile`` for the turn the session's work belongs to now (none while no turn of ours runs)."""
        receiver = self._receiver
        if receiver is None:
            receiver = self._hold_for_answer()
        if receiver is not None:
            receiver.feed(ChatFile(path, content, source="fs_write"))

    def _reader_marks(self) -> list[ReaderMark]:
        """Where the readers of this conversation's events stand (its turns' iterators, its streams' consumers): the
        session's interactive requests wait for them, so a handler is called in wire order with the events."""
        turns = [*self._active, *(s.owner for s in self._segments if s.owner is not None), *self._awaiting]
        marks = [mark for mark in map(ChatTurn.reader_mark, turns) if mark is not None]
        streams = self._streams
        return marks if streams is None else marks + streams.reader_marks()

    # ------------------------------------------------------------------ bookkeeping

    def _update_idle(self) -> None:
        busy = bool(self._awaiting or self._active or self._segments) or not self.state.is_idle
        if self._closed is not None or self._disconnected:  # nothing more will be reported
            busy = False
        if busy:
            if self._idle.is_set():
                self._idle = anyio.Event()
        elif not self._idle.is_set():
            self._idle.set()

    def _trim(self) -> None:
        """Keep the history within ``max_history_size``, a replay's as well (the state trims the timeline the
        replay is building)."""
        limit = self.max_history_size
        if not limit:
            return
        excess = len(self.state.timeline) - limit
        if excess > limit // 8:  # trim in batches; history() hides the slack
            for entry in self.state.drop_oldest(excess):
                if type(entry) is Message:
                    self._times.pop((entry.role, entry.message_id), None)


def _without_usage(event: StateChanged) -> StateChanged:
    return StateChanged(
        event.state, event.previous, event.stop_reason, event.error, event.background, event.completed, None, event.meta
    )
