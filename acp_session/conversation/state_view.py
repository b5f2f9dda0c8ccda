"""The read side of ``SessionState`` (a base class of it, kept apart for size): the timeline, the entities by id,
the subagents, the foreground state, usage, config options and commands, and a snapshot for comparison.

``SessionState.__init__`` sets every attribute read here; the annotations name them for the type checker.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import msgspec

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
)
from acp_session.conversation.subagent import FoldedSubagents, Subagent
from acp_session.schema import (
    AvailableCommand,
    BackgroundWork,
    Error,
    SessionConfigOption,
)
from acp_session.session import current_of_category

if TYPE_CHECKING:
    from acp_session.conversation.state import SessionState

__all__ = ["KNOWN_STATES", "ROLES", "StateFields", "StateView"]

KNOWN_STATES = frozenset({"running", "idle", "requires_action"})
"""Foreground states with a specific presentation; anything else is shown as generic busy."""
ROLES: tuple[MessageRole, MessageRole, MessageRole] = ("user", "agent", "thought")
"""The message roles, in the order of ``SessionState``'s message stores."""


class StateFields:
    """Every attribute ``SessionState.__init__`` sets, named once for the type checker of both its halves."""

    session_id: str | None
    _timeline: list[TimelineEntry]
    _messages: tuple[dict[str, Message], dict[str, Message], dict[str, Message]]
    _chunk_targets: tuple[Any, Any, dict[type, dict[str, Message]]] | None
    _tool_calls: dict[str, ToolCall]
    _terminals: dict[str, Terminal]
    _plans: dict[str, Plan]
    _compactions: dict[str, Compaction]
    _session_messages: dict[str, SessionMessageEntry]
    _subagents: dict[str, Subagent]
    _folded: FoldedSubagents | None
    _root: SessionState
    _descendants: dict[str, Subagent]
    _links: dict[str, str]
    _state: str
    _state_reported: bool
    _stop_reason: str | None
    _error: Error | None
    _background: list[BackgroundWork] | None
    _state_meta: dict[str, Any] | None
    _completions: int
    _usage: ContextUsage | None
    _turn_usage_total: TokenUsage | None
    _last_turn_usage: TokenUsage | None
    _config_options: list[SessionConfigOption]
    _available_commands: list[AvailableCommand]
    _config_updates: int
    _command_updates: int
    _session_info: SessionInfo
    _resume_marks: tuple[int, int] | None
    _replay_seen: set[int] | None
    _replay_order: list[TimelineEntry]
    _replay_unknowns: list[UnknownEntry]
    _replay_drops: bool


class StateView(StateFields):
    """What a folded session state reads like: every query of ``SessionState``."""

    @property
    def resuming(self) -> bool:
        """Inside a resume window (``begin_resume`` until ``apply_resume_response``)."""
        return self._resume_marks is not None

    @property
    def replaying(self) -> bool:
        """Inside a resume window with replay: the updates folded now re-send the agent's history."""
        return self._replay_seen is not None

    def history(self) -> list[TimelineEntry]:
        """The history entities (messages, tool calls, plans, compactions, ...), oldest first: a copy, as
        ``Conversation.history()`` and ``Subagent.history()`` give (docs/design.md, "history and timeline")."""
        return list(self._timeline)

    @property
    def timeline(self) -> Sequence[TimelineEntry]:
        """The same entities as ``history()``, without a copy: the live list the fold appends to (read it, do not
        change it; it changes as updates arrive)."""
        return self._timeline

    def message(self, message_id: str, role: MessageRole = "agent") -> Message | None:
        return self._messages[ROLES.index(role)].get(message_id)

    def messages(self, role: MessageRole) -> Mapping[str, Message]:
        return self._messages[ROLES.index(role)]

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

    @property
    def folded_subagents(self) -> FoldedSubagents:
        """This session's children no longer kept one by one (past ``max_subagents``): how many were folded away
        and their usage, and how many announcements were refused."""
        return self._folded if self._folded is not None else FoldedSubagents()

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
            **({} if self._folded is None else {"folded_subagents": dump(self._folded)}),
        }

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StateView):
            return NotImplemented
        return self.to_snapshot() == other.to_snapshot()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"SessionState(session_id={self.session_id!r}, state={self._state!r}, "
            f"timeline={len(self._timeline)}, completions={self._completions})"
        )
