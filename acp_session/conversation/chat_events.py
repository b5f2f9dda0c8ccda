"""Typed events of one chat turn, and the results a turn or a history read hands back.

A turn yields ``ChatStart`` once, then any mix of thought/text fragments, paired tool
begin/end (with updates in between), whole-plan progress and notices, files the agent wrote, and
finally exactly one of ``ChatDone`` or ``ChatError``. ``kind`` is a short tag for ``match``-free dispatch.

With a reconnect policy (``ClientBuilder.reconnect``) a turn may also yield ``ChatReconnecting`` (once per
attempt), ``ChatReconnected``, then what the agent did while the connection was down, once, taken from its
replay: those text, thought and tool events have ``replayed`` set. ``ChatSessionLost`` precedes the
``ChatError`` of a turn whose session the agent no longer has.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar, Literal

import msgspec

from acp_session.conversation.entities import Message, MessageRole, Plan, TimelineEntry, TokenUsage, ToolCall
from acp_session.schema import ContentBlock, Error, Notice, PlanEntry

__all__ = [
    "ChatDone",
    "ChatError",
    "ChatEvent",
    "ChatFile",
    "ChatFragment",
    "ChatMessage",
    "ChatNotice",
    "ChatProgress",
    "ChatReconnected",
    "ChatReconnecting",
    "ChatResponse",
    "ChatSessionLost",
    "ChatStart",
    "ChatSubagentEnd",
    "ChatSubagentStart",
    "ChatSubagentUpdate",
    "ChatText",
    "ChatThought",
    "ChatToolBegin",
    "ChatToolEnd",
    "ChatToolUpdate",
]


STOP_REASON_UNKNOWN = "_acpSession/unknown"
"""The ``stop_reason`` of a protocol v1 turn that a reconnect cut and whose stop reason the agent did not tell again
(v1 carries it only in the ``session/prompt`` answer, lost with the old connection): the turn ended, how is not
known. An implementation-specific value (the schema reserves stop reasons beginning with ``_`` for those), never
sent to an agent."""


class ChatResponse(msgspec.Struct, kw_only=True):
    """Everything one turn produced. ``steps`` are the history entities the turn touched, in order."""

    message_id: str | None
    text: str = ""
    thinking: str = ""
    tool_calls: list[ToolCall] = msgspec.field(default_factory=list)
    stop_reason: str | None = None
    error: Error | None = None
    usage: TokenUsage | None = None
    steps: list[TimelineEntry] = msgspec.field(default_factory=list)
    files: list[ChatFile] = msgspec.field(default_factory=list)
    """Every ``ChatFile`` of the turn, in order (the same file may be reported more than once)."""

    @property
    def cancelled(self) -> bool:
        return self.stop_reason == "cancelled"

    @property
    def file_paths(self) -> list[str]:
        """The paths of ``files``, each once, in the order first reported."""
        return list(dict.fromkeys(file.path for file in self.files))


class ChatEvent(msgspec.Struct, frozen=True, gc=False):
    """Base of every chat event."""

    kind: ClassVar[str] = ""


class ChatStart(ChatEvent, frozen=True):
    """The agent inserted the prompt as the user message ``message_id`` (exactly once per turn)."""

    kind: ClassVar[str] = "start"
    message_id: str


class ChatFragment(ChatEvent, frozen=True):
    """A fragment of one message of the turn, the reply's (``ChatText``) or the agent's reasoning
    (``ChatThought``): append ``text``; ``replaced`` means the message was rewritten and ``text`` is all of it."""

    text: str
    message_id: str
    replaced: bool = False
    replayed: bool = False
    """Produced while the connection was down, delivered from the agent's replay after a reconnect."""


class ChatThought(ChatFragment, frozen=True):
    """A fragment of the agent's reasoning. ``replaced`` means the message was rewritten: ``text`` is all of it."""

    kind: ClassVar[str] = "thought"


class ChatText(ChatFragment, frozen=True):
    """A fragment of the reply; append it. ``replaced`` means ``text`` is the message's whole new text."""

    kind: ClassVar[str] = "text"


class ChatToolBegin(ChatEvent, frozen=True):
    """A tool call appeared in this turn (live entity: read it when handling the event)."""

    kind: ClassVar[str] = "tool_begin"
    tool_call: ToolCall
    replayed: bool = False


class ChatToolUpdate(ChatEvent, frozen=True):
    kind: ClassVar[str] = "tool_update"
    tool_call: ToolCall
    replayed: bool = False


class ChatToolEnd(ChatEvent, frozen=True):
    """The tool call reached a final status, or the turn ended with it unfinished (``status`` as it stood)."""

    kind: ClassVar[str] = "tool_end"
    tool_call: ToolCall
    status: str
    replayed: bool = False


class ChatSubagentStart(ChatEvent, frozen=True):
    """The agent started a subagent (Preview): a child session, ``subagent`` (live: its ``state`` keeps folding
    the child's updates; ``tool_call_id`` is the tool call that started it, when its content links the child)."""

    kind: ClassVar[str] = "subagent_start"
    subagent: Any  # conversation.state.Subagent


class ChatSubagentUpdate(ChatEvent, frozen=True):
    """One of a subagent's own updates, folded into its state: ``change`` is what it changed there (a message,
    a tool call, ...)."""

    kind: ClassVar[str] = "subagent_update"
    subagent: Any
    change: Any  # a StateEvent of the child's fold


class ChatSubagentEnd(ChatEvent, frozen=True):
    """A subagent's work ended (its idle completion): its stop reason and that work's token usage if reported."""

    kind: ClassVar[str] = "subagent_end"
    subagent: Any
    stop_reason: str | None
    usage: TokenUsage | None = None


class ChatFile(ChatEvent, frozen=True):
    """The agent wrote (or deleted) a file: refresh or open ``path``.

    ``source`` says which report this is: ``"tool_call"``, one change of a completed tool call's diffs (emitted
    after its ``ChatToolEnd``, once per path per tool call), or ``"fs_write"``, a ``fs/write_text_file`` the
    client performed for a v1 agent (emitted when the file-system provider returned). ``text`` is the file's new
    text when known (the write's content, a v1 agent's diff); None otherwise: read the file at ``path`` (an
    absolute path on the agent's machine) or apply ``patch``, the diff's git patch (it may cover other files of
    the same diff). ``operation`` is the change's (``add``, ``modify``, ``delete``, ``move``, ``copy``, or an
    unknown one as sent), ``"write"`` for ``fs_write``; a deleted file has ``text`` None; ``old_path`` is the
    source of a move or copy.
    """

    kind: ClassVar[str] = "file"
    path: str
    text: str | None = None
    tool_call_id: str | None = None
    mime_type: str | None = None
    operation: str = "write"
    old_path: str | None = None
    patch: str | None = None
    source: Literal["tool_call", "fs_write"] = "tool_call"

    @property
    def deleted(self) -> bool:
        return self.operation == "delete"


class ChatProgress(ChatEvent, frozen=True):
    """The whole plan, every time: replace what you showed, so one event makes a late reader correct."""

    kind: ClassVar[str] = "progress"
    plan: Plan
    entries: list[PlanEntry]
    removed: bool = False


class ChatNotice(ChatEvent, frozen=True):
    kind: ClassVar[str] = "notice"
    notice: Notice


class ChatDone(ChatEvent, frozen=True):
    """The turn's foreground work ended (a new idle completion); carries the full reply."""

    kind: ClassVar[str] = "done"
    response: ChatResponse


class ChatError(ChatEvent, frozen=True):
    """The turn failed (prompt rejected, connection lost, ...); the stream ends after it."""

    kind: ClassVar[str] = "error"
    error: BaseException
    response: ChatResponse


class ChatReconnecting(ChatEvent, frozen=True):
    """The connection was lost while this turn ran; reconnect attempt ``attempt`` of ``attempts`` starts
    (``error``: why the last one failed, or the drop). The turn keeps waiting."""

    kind: ClassVar[str] = "reconnecting"
    attempt: int
    attempts: int
    error: BaseException


class ChatReconnected(ChatEvent, frozen=True):
    """The connection is back and the session resumed; what the turn missed follows, marked ``replayed``."""

    kind: ClassVar[str] = "reconnected"
    attempt: int


class ChatSessionLost(ChatEvent, frozen=True):
    """The agent no longer has this session after the reconnect; ``ChatError`` with ``SessionLost`` follows."""

    kind: ClassVar[str] = "session_lost"
    error: BaseException


@dataclass(frozen=True)
class ChatMessage:
    """One message of the history as ``messages()`` returns it; ``at`` is when this client first saw it."""

    role: MessageRole
    content: list[ContentBlock]
    at: datetime
    message_id: str
    message: Message = field(repr=False, compare=False)

    @property
    def text(self) -> str:
        return self.message.text
