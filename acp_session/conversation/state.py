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
from collections.abc import Callable, Sequence
from typing import Any

import msgspec

from acp_session.conversation.content import meta_patched
from acp_session.conversation.entities import (
    Compaction,
    ContextUsage,
    Message,
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
    ConfigOptionsChanged,
    NoticeReceived,
    ReplayCompleted,
    SessionInfoChanged,
    StateChanged,
    StateEvent,
    SubagentChanged,
    SubagentEvent,
    SubagentRefused,
    ToolCallChanged,
    UnknownUpdate,
    UsageChanged,
)
from acp_session.conversation.state_rules import ENTITY_RULES, MESSAGE_RULES, EntityRules
from acp_session.conversation.state_view import KNOWN_STATES, ROLES, StateView
from acp_session.conversation.subagent import FoldedSubagents, Subagent
from acp_session.schema import (
    AvailableCommand,
    AvailableCommandsUpdate,
    BackgroundWork,
    ConfigOptionUpdate,
    ContentBlock,
    Error,
    NewSessionResponse,
    Notice,
    ResumeSessionResponse,
    SessionConfigOption,
    SessionInfoUpdate,
    SetSessionConfigOptionResponse,
    UnknownSessionUpdate,
    UpdateSessionNotification,
    UsageUpdate,
)
from acp_session.schema import unstable as mu
from acp_session.session import DEFAULT_LIMITS
from acp_session.update_kinds import KINDS, chunk_types, kind_of

__all__ = ["KNOWN_STATES", "SessionState", "Subagent"]

UNSET = msgspec.UNSET


_Handler = Callable[["SessionState", Any], StateEvent]


class SessionState(StateView, EntityRules):
    """The folded state of one session: timeline, entities by id, foreground state and usage.

    ``max_subagents`` bounds the subagents a tree keeps (read on its root; a ``Conversation`` sets it from its
    connection's ``Limits.subagents``): see ``FoldedSubagents``."""

    max_subagents: int = DEFAULT_LIMITS.subagents

    def __init__(self, session_id: str | None = None) -> None:
        self.session_id = session_id
        self._timeline: list[TimelineEntry] = []
        # One message store per role, indexed like ROLES, so ids of different roles never collide.
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
        self._folded: FoldedSubagents | None = None  # children no longer kept one by one (max_subagents)
        self._finished: dict[str, None] = {}  # on a root: descendants whose state is idle, oldest finish first
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
        self._replay_unknowns: list[UnknownEntry] = []  # raw entries a replayed unknown update may match
        self._replay_drops = False  # a replay_complete forgets what the replay never mentioned

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
            targets = self._chunk_targets = (stores, roles, {t: stores[ROLES.index(r)] for t, r in roles})
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

    def begin_resume(self, *, replay: bool, drop_unreplayed: bool = False) -> None:
        """Open the resume window (call just before sending ``session/resume``).

        With ``replay=True`` the agent re-sends history: entities that already exist are rebuilt
        in place on their first replayed update, and new ones are slotted in replay order. The replay ends
        at the agent's ``replay_complete`` update when it sends one (then ``drop_unreplayed`` says whether what it
        never mentioned is forgotten, as ``apply_resume_response`` says), else at the answer.
        """
        self._resume_marks = (self._config_updates, self._command_updates)
        self._replay_seen = set() if replay else None
        self._replay_order = []
        self._replay_unknowns = [entry for entry in self._timeline if type(entry) is UnknownEntry] if replay else []
        self._replay_drops = drop_unreplayed
        for child in self._subagents.values():  # a subagent's history is replayed with its parent's
            child.state.begin_resume(replay=replay)

    def apply_resume_response(
        self, response: ResumeSessionResponse, *, drop_unreplayed: bool = False
    ) -> list[StateEvent]:
        """Close the resume window. The response does not imply any state (ACP2-055). ``drop_unreplayed``
        (a reconnect's replay, which is the agent's whole history): entities the replay never mentioned are
        forgotten, so the history equals the agent's (a restarted agent lost them, and may reuse their ids)."""
        marks = self._resume_marks or (self._config_updates, self._command_updates)
        self._finish_replay(drop_unreplayed)  # unless a replay_complete ended it already
        for child in self._subagents.values():
            if child.state.resuming:
                child.state.apply_resume_response(ResumeSessionResponse())
        self._resume_marks = None
        return self._initial_lists(response.config_options, response.available_commands, marks)

    def apply_set_config_option_response(self, response: SetSessionConfigOptionResponse) -> StateEvent:
        """The full option list returned by ``session/set_config_option`` replaces the stored one."""
        self._config_options = list(response.config_options)
        return ConfigOptionsChanged(self._config_options)

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
        creates it afresh at the end. Inside a replay the oldest are those of the timeline the replay builds
        (its order first), so a replay is held to the same bound as live updates.
        """
        if self._replay_seen is not None:
            return self._drop_replayed(count)
        count = min(count, len(self._timeline))
        if count <= 0:
            return []
        dropped = self._timeline[:count]
        del self._timeline[:count]
        for index, entry in enumerate(self._timeline):
            entry.position = index
        self._forget(dropped)
        return dropped

    def _forget(self, dropped: list[TimelineEntry]) -> None:
        """Take entries out of the id maps (their timeline slots are the caller's business)."""
        for entry in dropped:
            entry.position = -1
            if isinstance(entry, Message):
                self._messages[ROLES.index(entry.role)].pop(entry.message_id, None)
            elif isinstance(entry, ToolCall):
                self._tool_calls.pop(entry.tool_call_id, None)
            elif isinstance(entry, Plan):
                self._plans.pop(entry.plan_id, None)
            elif isinstance(entry, Compaction):
                self._compactions.pop(entry.compaction_id, None)
            elif isinstance(entry, SessionMessageEntry):
                self._session_messages.pop(entry.message_id, None)

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

    def _on_state(self, update: Any) -> StateEvent:
        previous = self._state
        state = update.state
        self._state = state
        if self._root is not self:
            self._root._child_reported(self.session_id, state)
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

    def _on_subagent(self, update: mu.SubagentUpdate) -> StateEvent:
        child_id = update.session_id
        child = self._subagents.get(child_id)
        created = child is None
        if child is None:
            root = self._root
            if len(root._descendants) >= root.max_subagents and not root._fold_oldest_finished():
                folded = self._folded_record()
                folded.refused += 1
                return SubagentRefused(child_id, folded)
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
            elif value is not None:  # unchanged, but reported: an idle one counts as finished (max_subagents)
                self._root._child_reported(child_id, value.state)
        return SubagentChanged(child, created, mirrored)

    def _folded_record(self) -> FoldedSubagents:
        if self._folded is None:
            self._folded = FoldedSubagents()
        return self._folded

    def _child_reported(self, session_id: str | None, state: str) -> None:
        """On a root: a descendant's state changed (idle: it finished, and may be folded to make room)."""
        if session_id is not None:
            self._finished.pop(session_id, None)
            if state == "idle":
                self._finished[session_id] = None

    def _fold_oldest_finished(self) -> bool:
        """On a root: fold the descendant that finished first (with all below it) into its parent's
        ``folded_subagents``; False if none has finished."""
        while self._finished:
            session_id = next(iter(self._finished))
            del self._finished[session_id]
            child = self._descendants.get(session_id)
            if child is None or child.state.resuming:
                continue
            holder = self._descendants.get(child.parent_session_id or "")
            parent = self if holder is None else holder.state
            if parent._subagents.get(session_id) is child:
                del parent._subagents[session_id]
            folded = parent._folded_record()
            stack = [child]
            while stack:
                gone = stack.pop()
                if self._descendants.get(gone.session_id) is gone:
                    del self._descendants[gone.session_id]
                self._finished.pop(gone.session_id, None)
                folded.count += 1
                stack.extend(gone.state._subagents.values())
            usage = child.usage
            if usage is not None:
                if folded.usage is None:
                    folded.usage = TokenUsage()
                folded.usage.add(usage)
            return True
        return False

    def _on_notice(self, update: Notice) -> StateEvent:
        return NoticeReceived(update)

    def _on_unknown(self, update: UnknownSessionUpdate) -> StateEvent:
        if update.tag == "replay_complete":  # the v2 RFD's end of a replay (not in the pinned schema yet)
            ended = self._replay_seen is not None
            self._finish_replay(self._replay_drops)
            return ReplayCompleted(ended)
        if self._replay_seen is not None:
            matched = self._match_replayed_unknown(update)
            if matched is not None:
                return UnknownUpdate(matched, False)
        entry = UnknownEntry(raw=update)
        self._place(entry)
        return UnknownUpdate(entry, True)

    def _match_replayed_unknown(self, update: UnknownSessionUpdate) -> UnknownEntry | None:
        """The earliest existing raw entry equal to a replayed unknown update that the replay has not matched yet
        (only those the state held when the replay began are candidates: one pass over them, not the timeline)."""
        seen = self._replay_seen
        assert seen is not None
        candidates = self._replay_unknowns
        for index, entry in enumerate(candidates):
            if entry.raw == update and entry.position >= 0 and id(entry) not in seen:
                del candidates[index]
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


_BY_TAG: dict[str, _Handler] = {
    **MESSAGE_RULES,
    **ENTITY_RULES,
    "subagent_update": SessionState._on_subagent,
    "state_update": SessionState._on_state,
    "available_commands_update": SessionState._on_commands,
    "config_option_update": SessionState._on_config,
    "session_info_update": SessionState._on_session_info,
    "usage_update": SessionState._on_usage,
    "notice": SessionState._on_notice,
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
