"""``SessionState``: a sans-IO fold of ``session/update`` notifications into session history.

``apply(update)`` is a dict dispatch on the update's exact type followed by an in-place patch of
one entity; it never awaits and never sends. Patch rules follow the schema (rule ids are cited
in ``docs/rules.md`` and the tests): omitted keeps, null clears, a value replaces, chunks append.

Resume: ``SessionState.begin_resume`` opens a window that ``apply_resume_response``
closes. Inside it no idle snapshot counts as a completion or adds usage, and with ``replay=True``
every entity that already existed is rebuilt in place from the replayed updates (first touch
resets it), so replaying a history onto the live state that saw it gives an identical state.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import msgspec

from acp_session.conversation.content import meta_patched
from acp_session.conversation.entities import (
    Compaction,
    ContextUsage,
    Message,
    MessageRole,
    Plan,
    SessionInfo,
    SessionMessageEntry,
    Terminal,
    TimelineEntry,
    TokenUsage,
    ToolCall,
    UnknownEntry,
    join_chunks,
)
from acp_session.conversation.events import (
    CommandsChanged,
    CompactionChanged,
    ConfigOptionsChanged,
    MessageChanged,
    NoticeReceived,
    PlanChanged,
    SessionInfoChanged,
    SessionMessageChanged,
    StateChanged,
    StateEvent,
    SubagentChanged,
    SubagentEvent,
    TerminalChanged,
    ToolCallChanged,
    UnknownUpdate,
    UsageChanged,
)
from acp_session.schema import (
    AvailableCommand,
    AvailableCommandsUpdate,
    BackgroundWork,
    CompactionSummaryChunk,
    CompactionUpdate,
    ConfigOptionUpdate,
    ContentBlock,
    Error,
    NewSessionResponse,
    Notice,
    ResumeSessionResponse,
    SessionConfigOption,
    SessionInfoUpdate,
    SetSessionConfigOptionResponse,
    TerminalOutput,
    TerminalOutputChunk,
    TerminalUpdate,
    ToolCallContentChunk,
    ToolCallUpdated,
    UnknownSessionUpdate,
    UpdateSessionNotification,
    UsageUpdate,
)
from acp_session.schema import unstable as mu
from acp_session.session import current_of_category
from acp_session.update_kinds import KINDS, chunk_types, kind_of

__all__ = ["KNOWN_STATES", "SessionState", "Subagent"]

UNSET = msgspec.UNSET

KNOWN_STATES = frozenset({"running", "idle", "requires_action"})
"""Foreground states with a specific presentation; anything else is shown as generic busy."""

_Handler = Callable[["SessionState", Any], StateEvent]
_ROLES: tuple[MessageRole, MessageRole, MessageRole] = ("user", "agent", "thought")


class Subagent:
    """A child session that a session created (Preview ``subagent_update``), with its own folded ``state``.

    The parent's ``subagent_update`` patches the display fields (omitted keeps, null clears); the child's own
    updates fold into ``state``, a ``SessionState`` that may have subagents of its own (a tree).
    ``tool_call_id`` is the parent's tool call whose content links the child (``{"type": "session"}``).
    """

    __slots__ = (
        "additional_directories",
        "capabilities",
        "cwd",
        "description",
        "meta",
        "parent_session_id",
        "reported_state",
        "session_id",
        "state",
        "title",
        "tool_call_id",
    )

    def __init__(self, session_id: str, parent_session_id: str | None, state: SessionState) -> None:
        self.session_id = session_id
        self.parent_session_id = parent_session_id
        self.state = state
        self.title: str | None = None
        self.description: str | None = None
        self.capabilities: mu.SubagentSessionCapabilities | None = None
        self.cwd: str | None = None
        self.additional_directories: list[str] | None = None
        self.meta: dict[str, Any] | None = None
        self.reported_state: Any = None
        """The parent's latest mirror of the child's state (a ``StateUpdate``), None when not reported."""
        self.tool_call_id: str | None = None

    @property
    def cancellable(self) -> bool:
        """The child advertises ``capabilities.cancel``: the client may cancel its work (``session/cancel``)."""
        caps = self.capabilities
        return caps is not None and caps.cancel is not UNSET and caps.cancel is not None

    @property
    def history(self) -> Sequence[TimelineEntry]:
        return self.state.timeline

    @property
    def usage(self) -> TokenUsage | None:
        """The child's token usage summed over its completions."""
        return self.state.turn_usage_total

    @property
    def subagents(self) -> Mapping[str, Subagent]:
        return self.state.subagents

    def to_snapshot(self) -> dict[str, Any]:
        dump = msgspec.to_builtins
        return {
            "session_id": self.session_id,
            "parent_session_id": self.parent_session_id,
            "title": self.title,
            "description": self.description,
            "capabilities": dump(self.capabilities),
            "cwd": self.cwd,
            "additional_directories": self.additional_directories,
            "meta": self.meta,
            "reported_state": dump(self.reported_state),
            "tool_call_id": self.tool_call_id,
            "state": self.state.to_snapshot(),
        }

    def __repr__(self) -> str:
        return f"Subagent({self.session_id!r}, title={self.title!r}, state={self.state.state!r})"


class SessionState:
    """The folded state of one session: timeline, entities by id, foreground state and usage."""

    def __init__(self, session_id: str | None = None) -> None:
        self.session_id = session_id
        self._timeline: list[TimelineEntry] = []
        # One message store per role, indexed like _ROLES, so ids of different roles never collide.
        self._messages: tuple[dict[str, Message], dict[str, Message], dict[str, Message]] = ({}, {}, {})
        self._chunk_targets: tuple[Any, Any, dict[type, dict[str, Message]]] | None = None  # chunk_targets' cache
        self._tool_calls: dict[str, ToolCall] = {}
        self._terminals: dict[str, Terminal] = {}
        self._plans: dict[str, Plan] = {}
        self._compactions: dict[str, Compaction] = {}
        self._session_messages: dict[str, SessionMessageEntry] = {}
        self._subagents: dict[str, Subagent] = {}
        # Every descendant subagent by session id, kept on the root of a tree (a child state's root is its root's).
        self._root: SessionState = self
        self._descendants: dict[str, Subagent] = {}
        self._links: dict[str, str] = {}  # child session id -> the tool call whose content linked it first
        # A new session is idle until a state update says otherwise.
        self._state = "idle"
        self._state_reported = False
        self._stop_reason: str | None = None
        self._error: Error | None = None
        self._background: list[BackgroundWork] | None = None
        self._state_meta: dict[str, Any] | None = None
        self._completions = 0
        self._usage: ContextUsage | None = None
        self._turn_usage_total: TokenUsage | None = None
        self._last_turn_usage: TokenUsage | None = None
        self._config_options: list[SessionConfigOption] = []
        self._available_commands: list[AvailableCommand] = []
        self._config_updates = 0
        self._command_updates = 0
        self._session_info = SessionInfo()
        # Resume bookkeeping: None outside a resume window.
        self._resume_marks: tuple[int, int] | None = None
        self._replay_seen: set[int] | None = None
        # The timeline as the replay rebuilds it: each entity where its first replayed update puts it.
        self._replay_order: list[TimelineEntry] = []

    # ------------------------------------------------------------------ folding

    def apply(self, update: Any) -> StateEvent:
        """Fold one ``SessionUpdate`` (stable or unstable) and return what changed."""
        handler = _HANDLERS.get(type(update)) or _handler_of(type(update))
        if handler is None:
            return self._on_other(update)
        return handler(self, update)

    def chunk_targets(self) -> dict[type, dict[str, Message]] | None:
        """For folding runs of chunks quickly: chunk update type -> the message store it appends to.

        Appending a chunk's ``content`` to the message found in its store under its ``message_id`` is
        all that ``apply`` does for a chunk of an existing message, which ``apply`` reports as
        ``MessageChanged(message, created=False, appended=content)``. A chunk whose message is not
        there yet must go through ``apply``. None during a resume window, where chunks do more.
        """
        if self._replay_seen is not None:
            return None
        stores = self._messages
        targets = self._chunk_targets
        if targets is None or targets[0] is not stores or targets[1] is not chunk_types():
            roles = chunk_types()
            targets = self._chunk_targets = (stores, roles, {t: stores[_ROLES.index(r)] for t, r in roles})
        return targets[2]

    def append_chunks(self, message: Message, blocks: list[ContentBlock]) -> None:
        """Fold a run of chunks of ``message`` (an existing message, found through ``chunk_targets``): what
        ``apply`` does for each, without an event per chunk (the caller reports the run)."""
        join_chunks(message.content, blocks)

    def apply_notification(self, notification: UpdateSessionNotification) -> StateEvent:
        """Fold the update carried by a ``session/update`` notification: this session's, or a descendant
        subagent's (into that child's state, reported as a ``SubagentEvent``); ``KeyError`` for another
        session's."""
        session_id = notification.session_id
        if session_id == self.session_id or self.session_id is None:
            return self.apply(notification.update)
        return self.apply_descendant(session_id, notification.update)

    def descendant(self, session_id: str) -> Subagent | None:
        """The subagent ``session_id`` anywhere below this session (children, their children, ...)."""
        return self._root._descendants.get(session_id)

    def apply_descendant(self, session_id: str, update: Any) -> StateEvent:
        """Fold a descendant subagent's own update into its state; the event says which child it was."""
        subagent = self.descendant(session_id)
        if subagent is None:
            raise KeyError(session_id)
        return SubagentEvent(subagent, subagent.state.apply(update))

    def apply_new_session_response(self, response: NewSessionResponse) -> list[StateEvent]:
        """Take the session id and initial lists, never overwriting what updates already reported.

        The response carries no state, and the default idle only stands while no state update has
        arrived, so an earlier ``state_update`` is kept (ACP2-031). Lists reported by an earlier
        ``config_option_update`` / ``available_commands_update`` are newer than the response's.
        """
        self.session_id = response.session_id
        return self._initial_lists(response.config_options, response.available_commands, (0, 0))

    def begin_resume(self, *, replay: bool) -> None:
        """Open the resume window (call just before sending ``session/resume``).

        With ``replay=True`` the agent re-sends history: entities that already exist are rebuilt
        in place on their first replayed update, and new ones are slotted in replay order.
        """
        self._resume_marks = (self._config_updates, self._command_updates)
        self._replay_seen = set() if replay else None
        self._replay_order = []
        for child in self._subagents.values():  # a subagent's history is replayed with its parent's
            child.state.begin_resume(replay=replay)

    def apply_resume_response(self, response: ResumeSessionResponse) -> list[StateEvent]:
        """Close the resume window. The response does not imply any state (ACP2-055)."""
        marks = self._resume_marks or (self._config_updates, self._command_updates)
        for child in self._subagents.values():
            if child.state.resuming:
                child.state.apply_resume_response(ResumeSessionResponse())
        self._resume_marks = None
        if self._replay_seen is not None:
            self._adopt_replay_order()
        self._replay_seen = None
        self._replay_order = []
        return self._initial_lists(response.config_options, response.available_commands, marks)

    def apply_set_config_option_response(self, response: SetSessionConfigOptionResponse) -> StateEvent:
        """The full option list returned by ``session/set_config_option`` replaces the stored one."""
        self._config_options = list(response.config_options)
        return ConfigOptionsChanged(self._config_options)

    @property
    def resuming(self) -> bool:
        return self._resume_marks is not None

    @property
    def replaying(self) -> bool:
        """Inside a resume window with replay: the updates folded now re-send the agent's history."""
        return self._replay_seen is not None

    # ------------------------------------------------------------------ local edits (not from the wire)

    def copy(self, session_id: str | None) -> SessionState:
        """An independent copy of this state (every entity copied) for another session, e.g. a fork's: the
        copy's history starts as this one's and from then on the two are folded apart."""
        if self._resume_marks is not None:
            raise RuntimeError("cannot copy a state during a resume")
        clone = copy.deepcopy(self)
        clone.session_id = session_id
        clone._chunk_targets = None
        clone._root = clone  # the copy is the root of its own tree
        return clone

    def drop_oldest(self, count: int) -> list[TimelineEntry]:
        """Forget the ``count`` oldest timeline entries (history trimming); returns what was dropped.

        Positions of the kept entries are renumbered. An update that later names a dropped entity
        creates it afresh at the end. Not allowed inside a resume window.
        """
        if self._resume_marks is not None:
            raise RuntimeError("cannot trim history during a resume")
        count = min(count, len(self._timeline))
        if count <= 0:
            return []
        dropped = self._timeline[:count]
        del self._timeline[:count]
        for index, entry in enumerate(self._timeline):
            entry.position = index
        for entry in dropped:
            entry.position = -1
            if isinstance(entry, Message):
                self._messages[_ROLES.index(entry.role)].pop(entry.message_id, None)
            elif isinstance(entry, ToolCall):
                self._tool_calls.pop(entry.tool_call_id, None)
            elif isinstance(entry, Plan):
                self._plans.pop(entry.plan_id, None)
            elif isinstance(entry, Compaction):
                self._compactions.pop(entry.compaction_id, None)
            elif isinstance(entry, SessionMessageEntry):
                self._session_messages.pop(entry.message_id, None)
        return dropped

    def clear_history(self) -> None:
        """Forget every history entity, terminal and usage total; foreground state and session-level
        lists (config options, commands, session info, context usage) are kept."""
        if self._resume_marks is not None:
            raise RuntimeError("cannot clear history during a resume")
        for entry in self._timeline:
            entry.position = -1
        self._timeline = []
        self._messages = ({}, {}, {})
        self._tool_calls = {}
        self._terminals = {}
        self._plans = {}
        self._compactions = {}
        self._session_messages = {}
        self._completions = 0
        self._turn_usage_total = None
        self._last_turn_usage = None

    def mark_cancelled(self, tool_call_ids: Sequence[str]) -> list[StateEvent]:
        """Locally mark unfinished tool calls ``cancelled`` right after sending ``session/cancel``.

        The agent's later updates still apply on top (ACP2-040), and a replay rebuilds the calls
        from what the agent reports, so this never makes the state disagree for long.
        """
        events: list[StateEvent] = []
        for tool_call_id in tool_call_ids:
            call = self._tool_calls.get(tool_call_id)
            if call is not None and not call.is_final:
                call.status = "cancelled"
                events.append(ToolCallChanged(call, False))
        return events

    # ------------------------------------------------------------------ reading

    @property
    def timeline(self) -> Sequence[TimelineEntry]:
        """History entities in first-appearance order (live list: do not mutate)."""
        return self._timeline

    def message(self, message_id: str, role: MessageRole = "agent") -> Message | None:
        return self._messages[_ROLES.index(role)].get(message_id)

    def messages(self, role: MessageRole) -> Mapping[str, Message]:
        return self._messages[_ROLES.index(role)]

    @property
    def tool_calls(self) -> Mapping[str, ToolCall]:
        return self._tool_calls

    @property
    def terminals(self) -> Mapping[str, Terminal]:
        """Agent-owned terminals by id. They are not timeline entries: tool call content and the
        background list reference them by id."""
        return self._terminals

    @property
    def plans(self) -> Mapping[str, Plan]:
        return self._plans

    @property
    def compactions(self) -> Mapping[str, Compaction]:
        return self._compactions

    @property
    def session_messages(self) -> Mapping[str, SessionMessageEntry]:
        """Messages between sessions (Preview) by message id, in this session's transcript."""
        return self._session_messages

    @property
    def subagents(self) -> Mapping[str, Subagent]:
        """This session's child sessions (Preview ``subagent_update``) by session id, in announcement order."""
        return self._subagents

    def subagents_of(self, tool_call_id: str) -> list[Subagent]:
        """The children a tool call's content links (``{"type": "session", "sessionId": ...}``)."""
        return [child for child in self._subagents.values() if child.tool_call_id == tool_call_id]

    @property
    def state(self) -> str:
        """The last reported foreground state string, as sent (``idle`` before any report)."""
        return self._state

    @property
    def state_reported(self) -> bool:
        return self._state_reported

    @property
    def is_idle(self) -> bool:
        """Only a reported (or default) ``idle``; unrecognized states are never idle (ACP2-058)."""
        return self._state == "idle"

    @property
    def display_state(self) -> str:
        """``running``, ``idle`` or ``requires_action``; any other state shows as generic ``busy``."""
        state = self._state
        return state if state in KNOWN_STATES else "busy"

    @property
    def stop_reason(self) -> str | None:
        """Stop reason of the latest state update when it is idle and carries one, else None."""
        return self._stop_reason

    @property
    def error(self) -> Error | None:
        return self._error

    @property
    def background(self) -> list[BackgroundWork] | None:
        """Latest background snapshot: None when not reported (unknown), [] when none runs."""
        return self._background

    @property
    def state_meta(self) -> dict[str, Any] | None:
        """The ``_meta`` of the latest state update (e.g. codex-acp's ``quota``); None when it carried none."""
        return self._state_meta

    @property
    def completions(self) -> int:
        """Foreground work items seen ending (repeated and resume idle snapshots excluded)."""
        return self._completions

    @property
    def usage(self) -> ContextUsage | None:
        return self._usage

    @property
    def turn_usage_total(self) -> TokenUsage | None:
        """Sum of the per-work usage reported on new completions (unstable); None if never reported."""
        return self._turn_usage_total

    @property
    def last_turn_usage(self) -> TokenUsage | None:
        return self._last_turn_usage

    @property
    def config_options(self) -> list[SessionConfigOption]:
        return self._config_options

    @property
    def mode(self) -> str | None:
        """The current value of the session's mode option (``category == "mode"``; v1 modes are one)."""
        return current_of_category(self._config_options, "mode")

    @property
    def model(self) -> str | None:
        """The current value of the session's model option (``category == "model"``)."""
        return current_of_category(self._config_options, "model")

    def config_option(self, config_id: str) -> SessionConfigOption | None:
        """Look an option up by id; categories are never needed for this (ACP2-033)."""
        for option in self._config_options:
            found = option.get("configId") if isinstance(option, dict) else option.config_id
            if found == config_id:
                return option
        return None

    @property
    def available_commands(self) -> list[AvailableCommand]:
        return self._available_commands

    @property
    def session_info(self) -> SessionInfo:
        return self._session_info

    def to_snapshot(self) -> dict[str, Any]:
        """Plain-JSON view of everything folded, for equality and debugging.

        Terminal output is compared as bytes, because a chunked stream and one replacement
        snapshot of the same bytes are the same terminal state.
        """
        dump = msgspec.to_builtins
        terminals = {}
        for terminal_id, terminal in self._terminals.items():
            data = dump(terminal)
            data.pop("chunks")
            data["output"] = None if terminal.output is None and not terminal.chunks else terminal.output_bytes.hex()
            terminals[terminal_id] = data
        return {
            "session_id": self.session_id,
            "timeline": [dump(entry) for entry in self._timeline],
            "terminals": terminals,
            "state": self._state,
            "state_reported": self._state_reported,
            "stop_reason": self._stop_reason,
            "error": dump(self._error),
            "background": dump(self._background),
            "completions": self._completions,
            "usage": dump(self._usage),
            "turn_usage_total": dump(self._turn_usage_total),
            "last_turn_usage": dump(self._last_turn_usage),
            "config_options": dump(self._config_options),
            "available_commands": dump(self._available_commands),
            "session_info": dump(self._session_info),
            "subagents": {sid: child.to_snapshot() for sid, child in self._subagents.items()},
        }

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SessionState):
            return NotImplemented
        return self.to_snapshot() == other.to_snapshot()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"SessionState(session_id={self.session_id!r}, state={self._state!r}, "
            f"timeline={len(self._timeline)}, completions={self._completions})"
        )

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
        _copy_set_fields(update, call, ("name", "title", "raw_input", "raw_output", "capabilities"))
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
        _copy_set_fields(update, terminal, ("command", "cwd", "exit_status", "size", "capabilities"))
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

    def _on_state(self, update: Any) -> StateEvent:
        previous = self._state
        state = update.state
        self._state = state
        self._state_reported = True
        background = update.background
        self._background = list(background) if isinstance(background, list) else None
        meta = update.meta
        self._state_meta = meta if isinstance(meta, dict) else None
        completed = False
        turn_usage: TokenUsage | None = None
        if state == "idle":
            reason = update.stop_reason
            self._stop_reason = reason if isinstance(reason, str) else None
            error = update.error
            self._error = error if isinstance(error, Error) else None
            # Only an idle that follows non-idle work is a completion; a repeated idle snapshot,
            # and any snapshot inside a resume window, is context only (ACP2-045).
            if previous != "idle" and self._resume_marks is None:
                completed = True
                self._completions += 1
                wire_usage = getattr(update, "usage", None)
                if wire_usage is not None and wire_usage is not UNSET:
                    turn_usage = TokenUsage.from_wire(wire_usage)
                    self._last_turn_usage = turn_usage
                    if self._turn_usage_total is None:
                        self._turn_usage_total = TokenUsage()
                    self._turn_usage_total.add(turn_usage)
        else:
            self._stop_reason = None
            self._error = None
        return StateChanged(
            state, previous, self._stop_reason, self._error, self._background, completed, turn_usage, self._state_meta
        )

    def _on_usage(self, update: UsageUpdate) -> StateEvent:
        previous = self._usage
        cost = update.cost
        if cost is UNSET:
            cost = previous.cost if previous is not None else None
        meta = update.meta
        self._usage = ContextUsage(
            used=update.used, size=update.size, cost=cost, meta=meta if isinstance(meta, dict) else None
        )
        return UsageChanged(self._usage)

    def _on_commands(self, update: AvailableCommandsUpdate) -> StateEvent:
        self._command_updates += 1
        self._available_commands = list(update.available_commands)
        return CommandsChanged(self._available_commands)

    def _on_config(self, update: ConfigOptionUpdate) -> StateEvent:
        self._config_updates += 1
        self._config_options = list(update.config_options)
        return ConfigOptionsChanged(self._config_options)

    def _on_session_info(self, update: SessionInfoUpdate) -> StateEvent:
        info = self._session_info
        if update.title is not UNSET:
            info.title = update.title
        if update.updated_at is not UNSET:
            info.updated_at = update.updated_at
        if update.meta is not UNSET:
            info.meta = meta_patched(info.meta, update.meta)
        return SessionInfoChanged(info)

    def _link(self, child_id: Any, tool_call_id: str) -> None:
        if not isinstance(child_id, str):
            return
        child = self._subagents.get(child_id)
        if child is not None:
            if child.tool_call_id is None:
                child.tool_call_id = tool_call_id
        elif len(self._links) < 4096:
            self._links.setdefault(child_id, tool_call_id)

    def _on_subagent(self, update: mu.SubagentUpdate) -> StateEvent:
        child_id = update.session_id
        child = self._subagents.get(child_id)
        created = child is None
        if child is None:
            state = SessionState(child_id)
            state._root = self._root
            if self._resume_marks is not None:  # announced inside a replay: its history replays with ours
                state.begin_resume(replay=self._replay_seen is not None)
            child = Subagent(child_id, self.session_id, state)
            child.tool_call_id = self._links.pop(child_id, None)
            self._subagents[child_id] = child
            self._root._descendants[child_id] = child
        value: Any
        for name in ("title", "description", "cwd"):
            value = getattr(update, name)
            if value is not UNSET:
                setattr(child, name, value)
        value = update.capabilities
        if value is not UNSET:
            child.capabilities = value if isinstance(value, mu.SubagentSessionCapabilities) else None
        value = update.additional_directories
        if value is not UNSET:
            child.additional_directories = list(value) if isinstance(value, list) else None
        if update.meta is not UNSET:
            child.meta = meta_patched(child.meta, update.meta)
        mirrored: StateEvent | None = None
        value = update.state
        if value is not UNSET:
            child.reported_state = value
            # The mirror is the child's own snapshot: applied when it tells the child's state something new,
            # so a duplicate report (before or after the child's own) changes nothing.
            if value is not None and value.state != child.state.state:
                mirrored = child.state.apply(value)
        return SubagentChanged(child, created, mirrored)

    def _on_session_message(self, update: mu.SessionMessage) -> StateEvent:
        entry, created = self._session_message(update.message_id)
        _copy_set_fields(
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

    def _on_notice(self, update: Notice) -> StateEvent:
        return NoticeReceived(update)

    def _on_unknown(self, update: UnknownSessionUpdate) -> StateEvent:
        if self._replay_seen is not None:
            matched = self._match_replayed_unknown(update)
            if matched is not None:
                return UnknownUpdate(matched, False)
        entry = UnknownEntry(raw=update)
        self._place(entry)
        return UnknownUpdate(entry, True)

    def _match_replayed_unknown(self, update: UnknownSessionUpdate) -> UnknownEntry | None:
        """The earliest existing raw entry equal to a replayed unknown update that the replay has not matched yet."""
        seen = self._replay_seen
        assert seen is not None
        for entry in self._timeline:
            if type(entry) is UnknownEntry and id(entry) not in seen and entry.raw == update:
                seen.add(id(entry))
                self._replay_order.append(entry)
                return entry
        return None

    def _on_other(self, update: Any) -> StateEvent:
        """Typed variants this fold has no rule for (unstable extras) are kept raw like unknown ones."""
        if isinstance(update, dict):
            return self._on_unknown(UnknownSessionUpdate(update))
        if isinstance(update, msgspec.Struct):
            return self._on_unknown(UnknownSessionUpdate(msgspec.to_builtins(update)))
        raise TypeError(f"not a session update: {type(update).__name__}")

    def _initial_lists(self, options: Any, commands: Any, marks: tuple[int, int]) -> list[StateEvent]:
        events: list[StateEvent] = []
        if isinstance(options, list) and self._config_updates == marks[0]:
            self._config_options = list(options)
            events.append(ConfigOptionsChanged(self._config_options))
        if isinstance(commands, list) and self._command_updates == marks[1]:
            self._available_commands = list(commands)
            events.append(CommandsChanged(self._available_commands))
        return events


def _message_handlers(role_index: int) -> tuple[_Handler, _Handler]:
    """Chunk and upsert handlers bound to one role's message store."""
    role = _ROLES[role_index]

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

_BY_TAG: dict[str, _Handler] = {
    "user_message_chunk": _user_chunk,
    "user_message": _user_upsert,
    "agent_message_chunk": _agent_chunk,
    "agent_message": _agent_upsert,
    "agent_thought_chunk": _thought_chunk,
    "agent_thought": _thought_upsert,
    "state_update": SessionState._on_state,
    "tool_call_update": SessionState._on_tool_call,
    "tool_call_content_chunk": SessionState._on_tool_call_chunk,
    "terminal_update": SessionState._on_terminal,
    "terminal_output_chunk": SessionState._on_terminal_chunk,
    "plan_update": SessionState._on_plan,
    "plan_removed": SessionState._on_plan_removed,
    "available_commands_update": SessionState._on_commands,
    "config_option_update": SessionState._on_config,
    "session_info_update": SessionState._on_session_info,
    "usage_update": SessionState._on_usage,
    "notice": SessionState._on_notice,
    "compaction_update": SessionState._on_compaction,
    "compaction_summary_chunk": SessionState._on_compaction_chunk,
    "subagent_update": SessionState._on_subagent,
    "session_message": SessionState._on_session_message,
    "session_message_chunk": SessionState._on_session_message_chunk,
}
"""The fold's rule for each update kind of ``update_kinds.KINDS`` (the one registry of kinds), by tag."""

_missing = {kind.tag for kind in KINDS} ^ set(_BY_TAG)
if _missing:  # pragma: no cover - a kind added to one table and not the other
    raise RuntimeError(f"update kinds and fold handlers disagree: {sorted(_missing)}")

_HANDLERS: dict[type, _Handler] = {t: _BY_TAG[kind.tag] for kind in KINDS for t in kind.types}
_HANDLERS[UnknownSessionUpdate] = SessionState._on_unknown


def _handler_of(update_type: type) -> _Handler | None:
    """A registered subtype's handler (its kind's), cached by type; None for a type of no known kind."""
    kind = kind_of(update_type)
    if kind is None:
        return None
    handler = _HANDLERS[update_type] = _BY_TAG[kind.tag]
    return handler


def _copy_set_fields(update: Any, target: Any, names: tuple[str, ...]) -> None:
    """Patch semantics for plain fields: omitted keeps the old value, ``null`` or a value replaces it."""
    for name in names:
        value = getattr(update, name)
        if value is not UNSET:
            setattr(target, name, value)
