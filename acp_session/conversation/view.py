"""What a ``Conversation`` reads like (a base class of it, kept apart for size): its session and connection,
history, messages, usage, pending turns and idleness.

``Conversation.__init__`` sets every attribute read here; the annotations name them for the type checker.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import anyio

from acp_session.conversation.chat_events import ChatMessage, ChatResponse
from acp_session.conversation.entities import Compaction, Message, TimelineEntry, TokenUsage
from acp_session.conversation.state import SessionState
from acp_session.conversation.turn import ChatTurn
from acp_session.errors import AcpError

if TYPE_CHECKING:
    from acp_session.client import ClientConnection
    from acp_session.client.active_session import ActiveSession
    from acp_session.conversation.routing import Segment


__all__ = ["ConversationFields", "ConversationView", "IdleTimeout", "TurnTimeout"]


class IdleTimeout(AcpError, TimeoutError):
    """``Conversation.wait_for_idle(timeout=...)`` ran out of time."""


class TurnTimeout(AcpError, TimeoutError):
    """``Conversation.chat_to_completion(timeout=...)`` ran out of time; the turn's work was cancelled.

    ``turn`` is the ``ChatTurn``: it still ends when the agent reports the cancellation."""

    def __init__(self, message: str, turn: ChatTurn) -> None:
        super().__init__(message)
        self.turn = turn


class ConversationFields:
    """Every attribute ``Conversation.__init__`` sets, named once for the type checker of its halves."""

    state: SessionState
    max_history_size: int
    _session: ActiveSession | None
    _awaiting: list[ChatTurn]
    _active: list[ChatTurn]
    _segments: list[Segment]
    _receiver: Any
    _background: frozenset[str]
    _times: dict[tuple[str, str], float]
    _turns_total: int
    _last_response: ChatResponse | None
    _idle: anyio.Event
    _closed: AcpError | None
    _owned: ClientConnection | None
    _disconnected: bool
    _streams: Any  # the open streams' hub (streams._Hub), or None


class ConversationView(ConversationFields):
    """The read side of ``Conversation``."""

    @property
    def session(self) -> ActiveSession:
        if self._session is None:
            raise AcpError("this conversation is not attached to a session")
        return self._session

    @property
    def session_id(self) -> str | None:
        return self._session.session_id if self._session is not None else self.state.session_id

    @property
    def conversation_id(self) -> str | None:
        """``session_id`` under the name used by the conversation designs this layer was built against (listed
        method by method in docs/conversation.md)."""
        return self.session_id

    @property
    def connection(self) -> ClientConnection:
        """The connection the session is on."""
        return self.session.connection

    @property
    def owns_connection(self) -> bool:
        """True when ``Conversation.spawn`` made the connection the session is on: ``disconnect()`` closes it too.
        Every other conversation borrows its caller's connection, which ``disconnect()`` leaves open."""
        owned = self._owned
        return owned is not None and self._session is not None and self._session.connection is owned

    def history(self) -> list[TimelineEntry]:
        """The retained history entities (messages, tool calls, plans, compactions, unknown entries), oldest first:
        a copy of the newest ``max_history_size`` of ``state.history()`` (``state.timeline`` is the live list)."""
        timeline = self.state.timeline
        limit = self.max_history_size
        if limit and len(timeline) > limit:
            return list(timeline[-limit:])
        return list(timeline)

    def messages(self, *, include_thoughts: bool = False) -> list[ChatMessage]:
        """Retained messages with role, content and when this client first saw them."""
        out: list[ChatMessage] = []
        for entry in self.history():
            if type(entry) is Message and (include_thoughts or entry.role != "thought"):
                seen = self._times.get((entry.role, entry.message_id), 0.0)
                at = datetime.fromtimestamp(seen, timezone.utc)
                out.append(ChatMessage(entry.role, list(entry.content), at, entry.message_id, entry))
        return out

    @property
    def turn_start_indices(self) -> list[int]:
        """History indices of the retained user messages (where each turn starts)."""
        return [index for index, entry in enumerate(self.history()) if type(entry) is Message and entry.role == "user"]

    @property
    def compaction_indices(self) -> list[int]:
        """History indices of the retained compactions (where the agent compacted its context); like
        ``turn_start_indices`` they stay right after trimming."""
        return [index for index, entry in enumerate(self.history()) if type(entry) is Compaction]

    @property
    def turn_count(self) -> int:
        """User messages seen since creation or ``clear_history`` (replayed ones included, trimmed ones kept)."""
        return self._turns_total

    @property
    def last_response(self) -> str:
        """Text of the last finished chat turn; without one, of the last agent message in history."""
        if self._last_response is not None:
            return self._last_response.text
        for entry in reversed(self.state.timeline):
            if type(entry) is Message and entry.role == "agent":
                return entry.text
        return ""

    @property
    def last_chat_response(self) -> ChatResponse | None:
        return self._last_response

    @property
    def total_usage(self) -> TokenUsage | None:
        """Token usage summed over completions (None until the agent reports any)."""
        return self.state.turn_usage_total

    @property
    def last_turn_usage(self) -> TokenUsage | None:
        return self.state.last_turn_usage

    @property
    def is_idle(self) -> bool:
        return self._idle.is_set()

    @property
    def pending_turns(self) -> list[ChatTurn]:
        """Turns sent or running, oldest first."""
        owned = [s.owner for s in self._segments if s.owner is not None]
        return [*self._active, *owned, *self._awaiting]

    def clear_history(self) -> None:
        """Forget history, turn count and usage totals (the remote session is untouched)."""
        self.state.clear_history()
        self._times.clear()
        self._turns_total = 0
        self._last_response = None

    async def wait_for_idle(self, timeout: float | None = None) -> None:
        """Return once the session is idle and none of this conversation's prompts is pending (at once if so).

        Raises ``ConnectionClosed`` if the connection is lost while waiting (or was lost before, unless this
        conversation ``disconnect()``-ed), ``SessionLost`` once the agent lost the session, and ``IdleTimeout``
        when ``timeout`` seconds pass first (nothing is cancelled: the work goes on).
        """
        with anyio.move_on_after(timeout) as scope:
            while not self._idle.is_set():
                await self._idle.wait()
        if scope.cancelled_caught:
            raise IdleTimeout(f"the session was still busy after {timeout} s")
        closed = self._lost_connection()
        if closed is not None:
            raise closed

    def _lost_connection(self) -> AcpError | None:
        """Why the session's connection ended (or the session was lost), unless this conversation left it
        (``disconnect()``).

        Read from the connection itself, not only from ``_watch_connection``: the prompt answers that the end
        fails (and so the idle they make) are settled before that task runs, and a waiter woken by them may run
        first."""
        session = self._session
        if session is None or self._closed is not None:
            return self._closed if session is not None else None
        return None if self._disconnected else session.connection.rpc.close_reason
