"""``Subagent``: a child session a session created (Preview ``subagent_update``), with its own folded state;
``FoldedSubagents``: what is left of the children a session no longer keeps one by one (``Limits.subagents``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import msgspec

from acp_session.conversation.entities import (
    TimelineEntry,
    TokenUsage,
)
from acp_session.schema import unstable as mu

if TYPE_CHECKING:
    from acp_session.conversation.state import SessionState

UNSET = msgspec.UNSET
__all__ = ["FoldedSubagents", "Subagent"]


class FoldedSubagents(msgspec.Struct, kw_only=True):
    """A session's children no longer kept one by one, past the bound on subagents a tree keeps
    (``SessionState.max_subagents``, from ``Limits.subagents``): the oldest finished ones (and all below them)
    are folded in here to make room; a new one announced while every kept child still runs is refused."""

    count: int = 0
    """Children folded away (each with its own children), the oldest finished first."""
    usage: TokenUsage | None = None
    """Their token usage summed, None until one that reported usage was folded."""
    refused: int = 0
    """``subagent_update`` announcements of new children not kept, because every kept child still ran."""


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

    def history(self) -> list[TimelineEntry]:
        """The child's own history entities, oldest first (a copy: ``state.timeline`` is the live list)."""
        return self.state.history()

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
