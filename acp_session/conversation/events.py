"""What one fold step changed, so the async chat layer can react without re-deriving it.

Every ``SessionState.apply`` returns exactly one event. Events are frozen msgspec structs
(cheap to build on the hot path) that point at the live entity, which the fold keeps updating;
copy what you need if you hold an event for later. They are not GC-tracked (``gc=False``): an
event only points at entities and wire values, which never point back at events.
"""

from __future__ import annotations

from typing import Any

import msgspec

from acp_session.conversation.entities import (
    Compaction,
    ContextUsage,
    Message,
    Plan,
    SessionInfo,
    SessionMessageEntry,
    Terminal,
    TokenUsage,
    ToolCall,
    UnknownEntry,
)
from acp_session.schema import AvailableCommand, BackgroundWork, ContentBlock, Error, Notice, SessionConfigOption

__all__ = [
    "CommandsChanged",
    "CompactionChanged",
    "ConfigOptionsChanged",
    "MessageChanged",
    "NoticeReceived",
    "PlanChanged",
    "ReplayCompleted",
    "SessionInfoChanged",
    "SessionMessageChanged",
    "StateChanged",
    "StateEvent",
    "SubagentChanged",
    "SubagentEvent",
    "SubagentRefused",
    "TerminalChanged",
    "ToolCallChanged",
    "UnknownUpdate",
    "UsageChanged",
]


class StateEvent(msgspec.Struct, frozen=True, gc=False):
    """Base of every fold event."""


class MessageChanged(StateEvent, frozen=True):
    """A message was created or changed; ``appended`` is the block a chunk added (else None)."""

    message: Message
    created: bool
    appended: ContentBlock | None = None


class ToolCallChanged(StateEvent, frozen=True):
    """A tool call was created or patched; ``appended`` is the item a content chunk added."""

    tool_call: ToolCall
    created: bool
    appended: Any = None


class TerminalChanged(StateEvent, frozen=True):
    """A terminal was created or patched; ``appended`` is the base64 chunk just added."""

    terminal: Terminal
    created: bool
    appended: str | None = None


class PlanChanged(StateEvent, frozen=True):
    """A plan's content was replaced, or the plan was removed (unstable ``plan_removed``)."""

    plan: Plan
    created: bool
    removed: bool = False


class CompactionChanged(StateEvent, frozen=True):
    """A compaction was created or patched; ``appended`` is the summary block a chunk added."""

    compaction: Compaction
    created: bool
    appended: ContentBlock | None = None


class StateChanged(StateEvent, frozen=True):
    """A foreground-state snapshot arrived.

    ``completed`` is True only for an idle snapshot that ends foreground work seen as not idle
    before; repeated or resume snapshots never complete anything. ``turn_usage`` is the
    (unstable) per-work usage, set only together with ``completed``.
    """

    state: str
    previous: str
    stop_reason: str | None
    error: Error | None
    background: list[BackgroundWork] | None
    completed: bool
    turn_usage: TokenUsage | None = None
    meta: dict[str, Any] | None = None
    """The update's ``_meta`` (e.g. codex-acp's ``quota``), as sent."""

    @property
    def repeated(self) -> bool:
        return self.state == self.previous


class UsageChanged(StateEvent, frozen=True):
    usage: ContextUsage


class CommandsChanged(StateEvent, frozen=True):
    commands: list[AvailableCommand]


class ConfigOptionsChanged(StateEvent, frozen=True):
    options: list[SessionConfigOption]


class SessionInfoChanged(StateEvent, frozen=True):
    info: SessionInfo


class NoticeReceived(StateEvent, frozen=True):
    """A live notice: shown to the user, never stored in history."""

    notice: Notice


class UnknownUpdate(StateEvent, frozen=True):
    """An update this library does not understand; ``created`` is False when a replay matched it."""

    entry: UnknownEntry
    created: bool


class ReplayCompleted(StateEvent, frozen=True):
    """The agent's ``replay_complete`` update (the v2 RFD "session-replay-complete", not in the pinned schema yet:
    it arrives as an unknown update): the replay of a ``session/resume`` ends here rather than at the answer.
    ``ended`` is False when no replay was under way (then it changes nothing). Never kept in history."""

    ended: bool


class SessionMessageChanged(StateEvent, frozen=True):
    """A message between sessions (Preview) was created or patched; ``appended`` is a streamed chunk's block."""

    entry: SessionMessageEntry
    created: bool
    appended: ContentBlock | None = None


class SubagentChanged(StateEvent, frozen=True):
    """The parent's ``subagent_update``: a child was announced (``created``) or its display fields patched.
    ``mirrored`` is what the parent's copy of the child's state changed in the child's fold, if anything."""

    subagent: Any  # state.Subagent (the fold's own type; not importable here)
    created: bool
    mirrored: StateEvent | None = None


class SubagentRefused(StateEvent, frozen=True):
    """The parent announced a new child while the tree kept as many as it may and every one of them still ran:
    the child is not kept (``summary``, the parent's ``folded_subagents``, counts it)."""

    session_id: str
    summary: Any  # subagent.FoldedSubagents


class SubagentEvent(StateEvent, frozen=True):
    """One of a subagent's own updates, folded into the child's state: ``event`` is what it changed there."""

    subagent: Any  # state.Subagent
    event: StateEvent
