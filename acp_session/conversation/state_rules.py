"""The fold's rules for the entities of a session (a base class of ``SessionState``, kept apart for size): where
an entity goes in the timeline (and in a replay), and the patch rules for tool calls, terminals, plans,
compactions, subagents (Preview) and session messages (Preview). ``SessionState``'s dispatch table names them.

``SessionState.__init__`` sets every attribute used here; the annotations name them for the type checker.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import msgspec

from acp_session.conversation.content import copy_set_fields, meta_patched
from acp_session.conversation.entities import (
    Compaction,
    Message,
    Plan,
    SessionMessageEntry,
    Terminal,
    TimelineEntry,
    ToolCall,
    join_chunks,
)
from acp_session.conversation.events import (
    CompactionChanged,
    MessageChanged,
    PlanChanged,
    SessionMessageChanged,
    StateEvent,
    TerminalChanged,
    ToolCallChanged,
)
from acp_session.conversation.state_view import ROLES, StateFields
from acp_session.schema import (
    CompactionSummaryChunk,
    CompactionUpdate,
    TerminalOutput,
    TerminalOutputChunk,
    TerminalUpdate,
    ToolCallContentChunk,
    ToolCallUpdated,
)
from acp_session.schema import unstable as mu

if TYPE_CHECKING:
    from acp_session.conversation.state import SessionState

UNSET = msgspec.UNSET
__all__ = ["ENTITY_RULES", "MESSAGE_RULES", "EntityRules"]


class EntityRules(StateFields):
    """The patch rules of ``SessionState`` for entities other than messages and the session's own fields."""

    # Named here again: this module's message handlers reach the store of the state they are given.
    _messages: tuple[dict[str, Message], dict[str, Message], dict[str, Message]]

    def _forget(self, dropped: list[TimelineEntry]) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------------ timeline helpers

    def _place(self, entity: TimelineEntry) -> None:
        """Give a first-seen entity its timeline slot (the end); in a replay it also joins the replay order."""
        entity.position = len(self._timeline)
        self._timeline.append(entity)
        if self._replay_seen is not None:
            self._replay_seen.add(id(entity))
            self._replay_order.append(entity)

    def _touch(self, entity: Message | ToolCall | Plan | Compaction | SessionMessageEntry | Terminal) -> None:
        """A replayed update of an existing entity: the first one resets it so the replay rebuilds it."""
        seen = self._replay_seen
        assert seen is not None
        key = id(entity)
        if key not in seen:
            seen.add(key)
            entity.reset()
            if not isinstance(entity, Terminal):  # terminals are looked up by id, not kept in the timeline
                self._replay_order.append(entity)

    def _remove(self, entity: TimelineEntry) -> None:
        timeline = self._timeline
        at = entity.position
        del timeline[at]
        for index in range(at, len(timeline)):
            timeline[index].position = index
        if self._replay_seen is not None and id(entity) in self._replay_seen:
            self._replay_seen.discard(id(entity))
            self._replay_order.remove(entity)

    def _adopt_replay_order(self) -> None:
        """End of a replay: the timeline takes the replay's order (first replayed appearance fixes a position);
        entries the replay never mentioned keep their relative order after it."""
        seen = self._replay_seen
        assert seen is not None
        timeline = self._replay_order + [entry for entry in self._timeline if id(entry) not in seen]
        for index, entry in enumerate(timeline):
            entry.position = index
        self._timeline = timeline

    def _finish_replay(self, drop_unreplayed: bool) -> None:
        """The replay is over (its ``replay_complete`` update, or the resume's answer): the timeline takes its
        order; ``drop_unreplayed`` (the replay is the agent's whole history) forgets what it never mentioned.
        A subagent's history was replayed with this one: its replay is over too."""
        seen = self._replay_seen
        if seen is None:
            return
        if drop_unreplayed:
            self._forget([entry for entry in self._timeline if id(entry) not in seen])
            self._timeline = [entry for entry in self._timeline if id(entry) in seen]
        self._adopt_replay_order()
        self._replay_seen = None
        self._replay_order = []
        self._replay_unknowns = []
        for child in self._subagents.values():
            child.state._finish_replay(False)

    def _drop_replayed(self, count: int) -> list[TimelineEntry]:
        """``drop_oldest`` inside a replay: the oldest of the timeline the replay is building, which is the
        replay's order followed by what it has not mentioned yet, so the history bound holds during a replay as it
        does live (an endless replay cannot grow the state). What is dropped is forgotten as live trimming does:
        a later update naming it creates it afresh."""
        seen = self._replay_seen
        assert seen is not None
        count = min(count, len(self._timeline))
        if count <= 0:
            return []
        order = self._replay_order
        dropped = order[:count]
        del order[:count]
        gone = {id(entry) for entry in dropped}
        if len(dropped) < count:
            unmentioned = (entry for entry in self._timeline if id(entry) not in seen and id(entry) not in gone)
            for entry in unmentioned:
                dropped.append(entry)
                gone.add(id(entry))
                if len(dropped) == count:
                    break
        seen.difference_update(gone)  # an id() is reused once its entity is gone: never "seen" by mistake
        timeline = self._timeline = [entry for entry in self._timeline if id(entry) not in gone]
        for index, entry in enumerate(timeline):
            entry.position = index
        self._forget(dropped)
        return dropped

    # ------------------------------------------------------------------ handlers

    def _on_tool_call(self, update: ToolCallUpdated) -> StateEvent:
        call = self._tool_calls.get(update.tool_call_id)
        created = call is None
        if call is None:
            call = ToolCall(tool_call_id=update.tool_call_id)
            self._tool_calls[update.tool_call_id] = call
            self._place(call)
        elif self._replay_seen is not None:
            self._touch(call)
        copy_set_fields(update, call, ("name", "title", "raw_input", "raw_output", "capabilities"))
        value: Any = update.kind
        if value is not UNSET:
            call.kind = "other" if value is None else value
        value = update.status
        if value is not UNSET:
            call.status = "pending" if value is None else value
        value = update.content
        if value is not UNSET:
            call.content = list(value) if value else []
            for item in call.content:
                if isinstance(item, dict) and item.get("type") == "session":  # a link to a child session
                    self._link(item.get("sessionId"), call.tool_call_id)
        value = update.locations
        if value is not UNSET:
            call.locations = list(value) if value else []
        if update.meta is not UNSET:
            call.meta = meta_patched(call.meta, update.meta)
        return ToolCallChanged(call, created)

    def _on_tool_call_chunk(self, update: ToolCallContentChunk) -> StateEvent:
        call = self._tool_calls.get(update.tool_call_id)
        if call is None:
            call = ToolCall(tool_call_id=update.tool_call_id, content=[update.content])
            self._tool_calls[update.tool_call_id] = call
            self._place(call)
            return ToolCallChanged(call, True, update.content)
        if self._replay_seen is not None:
            self._touch(call)
        call.content.append(update.content)
        return ToolCallChanged(call, False, update.content)

    def _terminal(self, terminal_id: str) -> tuple[Terminal, bool]:
        terminal = self._terminals.get(terminal_id)
        if terminal is None:
            terminal = Terminal(terminal_id=terminal_id)
            self._terminals[terminal_id] = terminal
            if self._replay_seen is not None:
                self._replay_seen.add(id(terminal))
            return terminal, True
        if self._replay_seen is not None:
            self._touch(terminal)
        return terminal, False

    def _on_terminal(self, update: TerminalUpdate) -> StateEvent:
        terminal, created = self._terminal(update.terminal_id)
        copy_set_fields(update, terminal, ("command", "cwd", "exit_status", "size", "capabilities"))
        value: Any = update.output
        if value is not UNSET:
            # An output snapshot replaces every byte retained so far, chunks included.
            terminal.output = value.data if isinstance(value, TerminalOutput) else None
            terminal.chunks = []
        if update.meta is not UNSET:
            terminal.meta = meta_patched(terminal.meta, update.meta)
        return TerminalChanged(terminal, created)

    def _on_terminal_chunk(self, update: TerminalOutputChunk) -> StateEvent:
        terminal, created = self._terminal(update.terminal_id)
        terminal.chunks.append(update.data)
        return TerminalChanged(terminal, created, update.data)

    def _on_plan(self, update: Any) -> StateEvent:
        content = update.plan
        if isinstance(content, dict):
            raw_id = content.get("planId")
            plan_id = raw_id if isinstance(raw_id, str) else ""
        else:
            plan_id = content.plan_id
        plan = self._plans.get(plan_id)
        created = plan is None
        if plan is None:
            plan = Plan(plan_id=plan_id)
            self._plans[plan_id] = plan
            self._place(plan)
        elif self._replay_seen is not None:
            self._touch(plan)
        plan.content = content
        return PlanChanged(plan, created)

    def _on_plan_removed(self, update: Any) -> StateEvent:
        plan = self._plans.pop(update.plan_id, None)
        if plan is None:
            return PlanChanged(Plan(plan_id=update.plan_id), False, True)
        self._remove(plan)
        return PlanChanged(plan, False, True)

    def _compaction(self, compaction_id: str, status: str) -> tuple[Compaction, bool]:
        compaction = self._compactions.get(compaction_id)
        if compaction is None:
            compaction = Compaction(compaction_id=compaction_id, status=status)
            self._compactions[compaction_id] = compaction
            self._place(compaction)
            return compaction, True
        if self._replay_seen is not None:
            self._touch(compaction)
        return compaction, False

    def _on_compaction(self, update: CompactionUpdate) -> StateEvent:
        compaction, created = self._compaction(update.compaction_id, update.status)
        compaction.status = update.status
        value: Any = update.summary
        if value is not UNSET:
            compaction.summary = list(value) if value else []
        value = update.error
        if value is not UNSET:
            compaction.error = value
        if update.meta is not UNSET:
            compaction.meta = meta_patched(compaction.meta, update.meta)
        return CompactionChanged(compaction, created)

    def _on_compaction_chunk(self, update: CompactionSummaryChunk) -> StateEvent:
        compaction, created = self._compaction(update.compaction_id, "in_progress")
        compaction.summary.append(update.content)
        return CompactionChanged(compaction, created, update.content)

    def _link(self, child_id: Any, tool_call_id: str) -> None:
        if not isinstance(child_id, str):
            return
        child = self._subagents.get(child_id)
        if child is not None:
            if child.tool_call_id is None:
                child.tool_call_id = tool_call_id
        elif len(self._links) < 4096:
            self._links.setdefault(child_id, tool_call_id)

    def _on_session_message(self, update: mu.SessionMessage) -> StateEvent:
        entry, created = self._session_message(update.message_id)
        copy_set_fields(
            update, entry, ("sender_session_id", "recipient_session_id", "sender_message_id", "recipient_message_id")
        )
        value: Any = update.content
        if value is not UNSET:
            entry.content = list(value) if value else []
        if update.meta is not UNSET:
            entry.meta = meta_patched(entry.meta, update.meta)
        return SessionMessageChanged(entry, created)

    def _on_session_message_chunk(self, update: mu.SessionMessageChunk) -> StateEvent:
        entry, created = self._session_message(update.message_id)
        join_chunks(entry.content, [update.content])
        return SessionMessageChanged(entry, created, update.content)

    def _session_message(self, message_id: str) -> tuple[SessionMessageEntry, bool]:
        entry = self._session_messages.get(message_id)
        if entry is None:
            entry = SessionMessageEntry(message_id=message_id)
            self._session_messages[message_id] = entry
            self._place(entry)
            return entry, True
        if self._replay_seen is not None:
            self._touch(entry)
        return entry, False


_Handler = Callable[["SessionState", Any], StateEvent]


def _message_handlers(role_index: int) -> tuple[_Handler, _Handler]:
    """Chunk and upsert handlers bound to one role's message store."""
    role = ROLES[role_index]

    def on_chunk(state: SessionState, update: Any) -> StateEvent:
        store = state._messages[role_index]
        message = store.get(update.message_id)
        if message is None:
            # The chunk's _meta is scoped to the chunk: it never becomes the message's metadata.
            message = Message(role=role, message_id=update.message_id, content=[update.content])
            store[update.message_id] = message
            state._place(message)
            return MessageChanged(message, True, update.content)
        if state._replay_seen is not None:
            state._touch(message)
        join_chunks(message.content, [update.content])
        return MessageChanged(message, False, update.content)

    def on_upsert(state: SessionState, update: Any) -> StateEvent:
        store = state._messages[role_index]
        message = store.get(update.message_id)
        created = message is None
        if message is None:
            message = Message(role=role, message_id=update.message_id)
            store[update.message_id] = message
            state._place(message)
        elif state._replay_seen is not None:
            state._touch(message)
        content = update.content
        if content is not UNSET:
            message.content = list(content) if content else []
        if update.meta is not UNSET:
            message.meta = meta_patched(message.meta, update.meta)
        return MessageChanged(message, created)

    return on_chunk, on_upsert


_user_chunk, _user_upsert = _message_handlers(0)
_agent_chunk, _agent_upsert = _message_handlers(1)
_thought_chunk, _thought_upsert = _message_handlers(2)

MESSAGE_RULES: dict[str, _Handler] = {
    "user_message_chunk": _user_chunk,
    "user_message": _user_upsert,
    "agent_message_chunk": _agent_chunk,
    "agent_message": _agent_upsert,
    "agent_thought_chunk": _thought_chunk,
    "agent_thought": _thought_upsert,
}
"""The fold's rule for each message kind (chunk and upsert per role), by tag."""

ENTITY_RULES: dict[str, _Handler] = {
    "tool_call_update": EntityRules._on_tool_call,
    "tool_call_content_chunk": EntityRules._on_tool_call_chunk,
    "terminal_update": EntityRules._on_terminal,
    "terminal_output_chunk": EntityRules._on_terminal_chunk,
    "plan_update": EntityRules._on_plan,
    "plan_removed": EntityRules._on_plan_removed,
    "compaction_update": EntityRules._on_compaction,
    "compaction_summary_chunk": EntityRules._on_compaction_chunk,
    "session_message": EntityRules._on_session_message,
    "session_message_chunk": EntityRules._on_session_message_chunk,
}
"""The fold's rule for each entity kind of this module, by tag (``SessionState``'s table adds its own)."""
