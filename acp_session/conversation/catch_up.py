"""What the session-level streams (``receive_steps()`` / ``receive_chunks()``) missed while the connection was down.

A reconnect folds the agent's replay quietly (``recovery.py``): no stream sees it, since a replay re-sends what
the streams already had. What they did not have is computed instead, the way a chat turn's catch-up is: at the
drop, ``Seen.take`` records what every entity and session-level value showed; once the replay has rebuilt the
state, ``missed`` gives one fold event per entity created or changed since (history order), then the
session-level values that changed (terminals, subagents, usage, session info, config options, commands, and the
foreground state last, as it says how the work ended). Entities the agent's history no longer holds (a restarted
agent lost them) are counted, not reported: nothing can be said about them but that they are gone.

The outage's granularity is lost: its updates come as one event per entity (a message's missed text as one
``appended`` block, its whole text so far for a new one; a tool call's patches as one change), never the agent's
updates one by one.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from acp_session.conversation.entities import (
    Compaction,
    Message,
    Plan,
    SessionMessageEntry,
    TimelineEntry,
    ToolCall,
    UnknownEntry,
    is_plain_text,
)
from acp_session.conversation.events import (
    CommandsChanged,
    CompactionChanged,
    ConfigOptionsChanged,
    MessageChanged,
    PlanChanged,
    SessionInfoChanged,
    SessionMessageChanged,
    StateChanged,
    StateEvent,
    SubagentChanged,
    TerminalChanged,
    ToolCallChanged,
    UnknownUpdate,
    UsageChanged,
)
from acp_session.conversation.state import SessionState
from acp_session.schema import TextContent

__all__ = ["Seen", "missed"]

_SUBAGENT_FIELDS = ("title", "description", "reported_state", "cwd", "additional_directories", "meta", "tool_call_id")


def _plain(value: Any) -> Any:
    return msgspec.to_builtins(value)


def _signature(entity: TimelineEntry) -> Any:
    """What an entity shows, comparable with ``==`` (its position left out: a replay may renumber it)."""
    if type(entity) is Message:
        return (entity.text, [_plain(b) for b in entity.content if not is_plain_text(b)], _plain(entity.meta))
    shown = _plain(entity)
    shown.pop("position", None)
    return shown


class Seen:
    """What the streams had been shown at the drop. Entities are held (not only their ids), so an id is never
    reused by a new entity while the snapshot lives."""

    __slots__ = ("entities", "lists", "state", "subagents", "terminals")

    def __init__(
        self,
        entities: dict[int, tuple[TimelineEntry, Any]],
        terminals: dict[str, tuple[Any, Any]],
        subagents: dict[str, tuple[Any, Any]],
        state: Any,
        lists: tuple[Any, Any, Any, Any],
    ) -> None:
        self.entities = entities
        self.terminals = terminals
        self.subagents = subagents
        self.state = state
        self.lists = lists

    @classmethod
    def take(cls, state: SessionState) -> Seen:
        return cls(
            {id(entity): (entity, _signature(entity)) for entity in state.timeline},
            {tid: (terminal, _plain(terminal)) for tid, terminal in state.terminals.items()},
            {sid: (child, _subagent_signature(child)) for sid, child in state.subagents.items()},
            _state_signature(state),
            _list_signatures(state),
        )


def _subagent_signature(child: Any) -> Any:
    return [_plain(getattr(child, name)) for name in _SUBAGENT_FIELDS]


def _state_signature(state: SessionState) -> Any:
    return (state.state, state.stop_reason, _plain(state.error), _plain(state.background))


def _list_signatures(state: SessionState) -> tuple[Any, Any, Any, Any]:
    return (
        _plain(state.usage),
        _plain(state.session_info),
        _plain(state.config_options),
        _plain(state.available_commands),
    )


def missed(seen: Seen, state: SessionState) -> tuple[list[StateEvent], int]:
    """The fold events the streams missed since ``seen`` was taken, and how many of the entities they had been
    shown the state no longer holds."""
    events: list[StateEvent] = []
    held: set[int] = set()
    before = seen.entities
    timeline = state.timeline
    # The replay is the agent's whole history: what comes before the oldest entry still held was trimmed here
    # before the drop (max_history_size), shown long ago, and is not news.
    first = next((i for i, e in enumerate(timeline) if before.get(id(e), (None,))[0] is e), 0)
    for position, entity in enumerate(timeline):
        key = id(entity)
        held.add(key)
        old = before.get(key)
        if old is None or old[0] is not entity:
            if position >= first:
                events.append(_created(entity))
        else:
            signature = _signature(entity)
            if signature != old[1]:
                events.append(_changed(entity, old[1], signature))
    forgotten = sum(1 for key in before if key not in held)
    for terminal_id, terminal in state.terminals.items():
        was = seen.terminals.get(terminal_id)
        if was is None or was[0] is not terminal:
            events.append(TerminalChanged(terminal, True))
        elif _plain(terminal) != was[1]:
            events.append(TerminalChanged(terminal, False))
    for session_id, child in state.subagents.items():
        had = seen.subagents.get(session_id)
        if had is None or had[0] is not child:
            events.append(SubagentChanged(child, True))
        elif _subagent_signature(child) != had[1]:
            events.append(SubagentChanged(child, False))
    usage, info, options, commands = _list_signatures(state)
    was_usage, was_info, was_options, was_commands = seen.lists
    if usage != was_usage and state.usage is not None:
        events.append(UsageChanged(state.usage))
    if info != was_info:
        events.append(SessionInfoChanged(state.session_info))
    if options != was_options:
        events.append(ConfigOptionsChanged(state.config_options))
    if commands != was_commands:
        events.append(CommandsChanged(state.available_commands))
    if _state_signature(state) != seen.state:
        previous = seen.state[0]
        # Ended while away: a completion, as the live idle update would have been (the turns finish on it too).
        completed = state.is_idle and previous != "idle"
        change = StateChanged(state.state, previous, state.stop_reason, state.error, state.background, completed)
        events.append(change if state.state_meta is None else msgspec.structs.replace(change, meta=state.state_meta))
    return events, forgotten


def _created(entity: TimelineEntry) -> StateEvent:
    if type(entity) is Message:
        assert isinstance(entity, Message)
        text = entity.text
        if text and all(is_plain_text(block) for block in entity.content):
            # Its text so far as one block, as a live first chunk carries its own: what later chunks add to.
            return MessageChanged(entity, True, TextContent(text=text))
        return MessageChanged(entity, True)
    return _entity_event(entity, True)


def _changed(entity: TimelineEntry, old: Any, new: Any) -> StateEvent:
    if type(entity) is Message:
        assert isinstance(entity, Message)
        text, was = new[0], old[0]
        if new[1:] == old[1:] and text.startswith(was):
            return MessageChanged(entity, False, TextContent(text=text[len(was) :]))  # it grew: the missed text
        return MessageChanged(entity, False)  # rewritten while away: the whole message
    return _entity_event(entity, False)


_EVENT_OF: dict[type, Callable[[Any, bool], StateEvent]] = {
    ToolCall: ToolCallChanged,
    Plan: PlanChanged,
    Compaction: CompactionChanged,
    SessionMessageEntry: SessionMessageChanged,
}
"""The fold event that reports an entity other than a message, created or changed (``UnknownUpdate`` for the rest)."""


def _entity_event(entity: TimelineEntry, created: bool) -> StateEvent:
    make = _EVENT_OF.get(type(entity))
    if make is None:
        assert isinstance(entity, UnknownEntry)
        return UnknownUpdate(entity, created)
    return make(entity, created)
