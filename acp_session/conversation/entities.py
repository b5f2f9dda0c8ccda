"""History entities owned by ``SessionState``.

They are mutable msgspec structs so the fold can patch them in place (no copy per update) and
so ``msgspec.to_builtins`` gives a comparable snapshot for free. Callers read them; only the
fold writes them. ``position`` is the entity's index in the timeline, fixed by first appearance.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, Literal

import msgspec

from acp_session.conversation.content import text_of
from acp_session.schema import (
    TOOL_CALL_STATUS_VALUES,
    Content,
    ContentBlock,
    Cost,
    Diff,
    PlanEntry,
    PlanItems,
    TerminalCapabilities,
    TerminalExitStatus,
    TerminalSize,
    TextContent,
    ToolCallCapabilities,
    ToolCallContent,
    ToolCallLocation,
    UnknownSessionUpdate,
)
from acp_session.schema import Terminal as TerminalContent
from acp_session.schema import unstable as mu
from acp_session.session import FINAL_TOOL_CALL_STATUSES

__all__ = [
    "FINAL_TOOL_CALL_STATUSES",
    "Compaction",
    "ContextUsage",
    "Message",
    "MessageRole",
    "Plan",
    "SessionInfo",
    "SessionMessageEntry",
    "Terminal",
    "TimelineEntry",
    "TokenUsage",
    "ToolCall",
    "UnknownEntry",
]

MessageRole = Literal["user", "agent", "thought"]


Meta = dict[str, Any]


class _Entity(msgspec.Struct, kw_only=True, tag_field="entity"):
    """Common base: timeline index and the entity's patched ``_meta``."""

    meta: Meta | None = None
    position: int = -1


class Message(_Entity, tag="message"):
    """A user, agent or thought message keyed by its ``messageId`` (one store per role).

    Streamed text chunks are joined as they arrive (``join_chunks``): consecutive plain text blocks
    grow one block up to ``TEXT_BLOCK_SIZE`` characters before the next chunk starts another, so a
    long reply costs about its text, not a struct per chunk, and ``text`` joins few blocks.
    """

    role: MessageRole
    message_id: str
    content: list[ContentBlock] = msgspec.field(default_factory=list)

    @property
    def text(self) -> str:
        """Concatenated text of the text blocks (no copy is kept: a long reply is held once, in its blocks)."""
        return text_of(self.content)

    def reset(self) -> None:
        """Forget accumulated state so a history replay can rebuild it in place."""
        self.content = []
        self.meta = None


TEXT_BLOCK_SIZE = 1024
"""Characters a joined text block grows to; the chunk that reaches it closes the block. Joining a chunk
copies at most this much, and a block's fixed cost (about 120 bytes) is spread over this many characters."""


def is_plain_text(block: Any) -> bool:
    """A text block with no annotations and no ``_meta``: chunks of these are joined into one block."""
    return type(block) is TextContent and not block.annotations and not block.meta


def open_text_block(content: list[ContentBlock]) -> TextContent | None:
    """The last block when the next plain chunk joins it (plain text, shorter than ``TEXT_BLOCK_SIZE``)."""
    if content:
        last = content[-1]
        if is_plain_text(last) and len(last.text) < TEXT_BLOCK_SIZE:  # type: ignore[union-attr]
            return last  # type: ignore[return-value]
    return None


def join_chunks(content: list[ContentBlock], blocks: list[ContentBlock]) -> None:
    """Append chunks' blocks (one, or a run) under the joining rule: a plain text block joins an open last
    block, anything else is appended as is. A joined block is a new block (blocks handed out are never
    mutated); its texts are collected and joined once, when it closes or the run ends, so a run gives what
    one chunk at a time gives."""
    first = open_text_block(content)  # the block the next plain chunk joins, if any
    if first is None:
        pieces: list[str] = []
        size, slot = 0, len(content)
    else:
        pieces, size, slot = [first.text], len(first.text), len(content) - 1
    push = pieces.append
    for block in blocks:
        if type(block) is TextContent and not block.annotations and not block.meta:  # is_plain_text, inlined
            if first is None:
                first = block
            text = block.text
            push(text)
            size += len(text)
            if size < TEXT_BLOCK_SIZE:
                continue
            _put_joined(content, slot, pieces, first)
            pieces, size, first = [], 0, None
            push = pieces.append
            slot = len(content)
        else:
            if first is not None:
                _put_joined(content, slot, pieces, first)
                pieces, size, first = [], 0, None
                push = pieces.append
            content.append(block)
            slot = len(content)
    if first is not None:
        _put_joined(content, slot, pieces, first)


def _put_joined(content: list[ContentBlock], slot: int, pieces: list[str], first: TextContent) -> None:
    """Write the joined block of ``pieces`` (whose first block is ``first``) at ``slot``: replace the open
    last block, or append. A block of one piece is ``first`` itself."""
    if len(pieces) == 1 and pieces[0] is first.text:
        block: TextContent = first
    else:
        block = TextContent(text="".join(pieces), annotations=first.annotations, meta=first.meta)
    if slot < len(content):
        content[slot] = block
    else:
        content.append(block)


class ToolCall(_Entity, tag="tool_call"):
    """A tool call keyed by ``toolCallId``; fields start at the protocol defaults."""

    tool_call_id: str
    name: str | None = None
    title: str | None = None
    kind: str = "other"
    status: str = "pending"
    content: list[ToolCallContent] = msgspec.field(default_factory=list)
    locations: list[ToolCallLocation] = msgspec.field(default_factory=list)
    raw_input: Any = None
    raw_output: Any = None
    capabilities: ToolCallCapabilities | None = None

    @property
    def is_final(self) -> bool:
        """True once the status is completed, failed or cancelled (unknown statuses are still in progress)."""
        return self.status in FINAL_TOOL_CALL_STATUSES

    @property
    def has_known_status(self) -> bool:
        return self.status in TOOL_CALL_STATUS_VALUES

    @property
    def can_cancel(self) -> bool:
        """Whether ``tool_call/cancel`` may be sent now: only while the agent advertises it."""
        caps = self.capabilities
        return caps is not None and caps.cancel is not None and caps.cancel is not msgspec.UNSET

    @property
    def diffs(self) -> list[Diff]:
        return [item for item in self.content if type(item) is Diff]

    @property
    def terminal_ids(self) -> list[str]:
        """Terminals this tool call displays (display anchors; the terminal state lives in the session)."""
        return [item.terminal_id for item in self.content if type(item) is TerminalContent]

    @property
    def text(self) -> str:
        """Text of the plain content items (diffs and terminals are not text)."""
        return text_of([item.content for item in self.content if type(item) is Content])

    def reset(self) -> None:
        self.name = self.title = None
        self.kind, self.status = "other", "pending"
        self.content, self.locations = [], []
        self.raw_input = self.raw_output = None
        self.capabilities = None
        self.meta = None


class Terminal(_Entity, tag="terminal"):
    """An agent-owned terminal: a base64 output snapshot plus base64 chunks appended after it.

    Chunks are kept encoded and decoded one by one on demand, because each chunk is encoded on
    its own and concatenating encoded strings would corrupt the bytes. Unknown fields are None.
    """

    terminal_id: str
    command: str | None = None
    cwd: str | None = None
    output: str | None = None
    chunks: list[str] = msgspec.field(default_factory=list)
    exit_status: TerminalExitStatus | None = None
    size: TerminalSize | None = None
    capabilities: TerminalCapabilities | None = None

    @property
    def output_bytes(self) -> bytes:
        """All retained output bytes; a chunk that is not valid base64 contributes nothing."""
        parts = [] if self.output is None else [self.output]
        parts.extend(self.chunks)
        out = bytearray()
        for part in parts:
            try:
                out += base64.b64decode(part)
            except (binascii.Error, ValueError):
                continue
        return bytes(out)

    @property
    def exited(self) -> bool:
        return self.exit_status is not None

    @property
    def can_cancel(self) -> bool:
        """Whether ``terminal/cancel`` may be sent now: only while the agent advertises it."""
        caps = self.capabilities
        return caps is not None and caps.cancel is not None and caps.cancel is not msgspec.UNSET

    def reset(self) -> None:
        self.command = self.cwd = self.output = None
        self.chunks = []
        self.exit_status = self.size = self.capabilities = None
        self.meta = None


class Plan(_Entity, tag="plan"):
    """A plan keyed by ``planId``; every update replaces its content (unknown kinds are kept raw)."""

    plan_id: str
    content: Any = None

    @property
    def entries(self) -> list[PlanEntry]:
        content = self.content
        return list(content.entries) if isinstance(content, PlanItems) else []

    @property
    def markdown(self) -> str | None:
        """A Preview markdown plan's text (``PlanMarkdown``), else None."""
        content = self.content
        return content.content if isinstance(content, mu.PlanMarkdown) else None

    @property
    def file_uri(self) -> str | None:
        """A Preview file plan's URI (``PlanFile``: the plan lives in that file), else None."""
        content = self.content
        return content.uri if isinstance(content, mu.PlanFile) else None

    def reset(self) -> None:
        self.content = None


class Compaction(_Entity, tag="compaction"):
    """A context compaction keyed by ``compactionId`` with its (patched or appended) summary."""

    compaction_id: str
    status: str = "in_progress"
    summary: list[ContentBlock] = msgspec.field(default_factory=list)
    error: str | None = None

    @property
    def summary_text(self) -> str:
        return text_of(self.summary)

    def reset(self) -> None:
        self.status = "in_progress"
        self.summary = []
        self.error = None
        self.meta = None


class UnknownEntry(_Entity, tag="unknown"):
    """An update this library does not understand, kept raw at its place in the timeline."""

    raw: UnknownSessionUpdate

    @property
    def tag(self) -> str:
        return self.raw.tag

    def reset(self) -> None:
        """Raw entries are never rebuilt: a replayed copy is matched, not merged."""


class SessionMessageEntry(_Entity, tag="session_message"):
    """A message between two sessions (Preview ``session_message`` upserts and ``session_message_chunk``s): a
    parent's task to a subagent, or a subagent's answer, in the transcript of the session it was reported on."""

    message_id: str
    sender_session_id: str | None = None
    recipient_session_id: str | None = None
    sender_message_id: str | None = None
    """On an incoming view: the same message's id in the sender's transcript."""
    recipient_message_id: str | None = None
    """On an outgoing view: the same message's id in the recipient's transcript."""
    content: list[ContentBlock] = msgspec.field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(block.text for block in self.content if isinstance(block, TextContent))

    def reset(self) -> None:
        self.sender_session_id = self.recipient_session_id = None
        self.sender_message_id = self.recipient_message_id = None
        self.content = []
        self.meta = None


TimelineEntry = Message | ToolCall | Plan | Compaction | SessionMessageEntry | UnknownEntry


class SessionInfo(msgspec.Struct, kw_only=True):
    """Session metadata from ``session_info_update`` (patched field by field)."""

    title: str | None = None
    updated_at: str | None = None
    meta: Meta | None = None


class ContextUsage(msgspec.Struct, kw_only=True):
    """Context pressure from the latest ``usage_update``; ``cost`` is cumulative for the session."""

    used: int
    size: int
    cost: Cost | None = None
    meta: Meta | None = None
    """The latest ``usage_update``'s ``_meta``, as sent (each update's own, not patched)."""

    @property
    def fraction(self) -> float:
        """Share of the context window in use (0.0 when the size is unknown or zero)."""
        return self.used / self.size if self.size > 0 else 0.0


class TokenUsage(msgspec.Struct, kw_only=True):
    """Token counts of foreground work; optional counts stay None until some completion reports them."""

    total_tokens: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    thought_tokens: int | None = None
    cached_read_tokens: int | None = None
    cached_write_tokens: int | None = None

    @classmethod
    def from_wire(cls, usage: Any) -> TokenUsage:
        """Build from an unstable ``Usage`` struct (omitted/null optional counts become None)."""
        return cls(
            total_tokens=usage.total_tokens,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            thought_tokens=_opt_int(usage.thought_tokens),
            cached_read_tokens=_opt_int(usage.cached_read_tokens),
            cached_write_tokens=_opt_int(usage.cached_write_tokens),
        )

    def add(self, other: TokenUsage) -> None:
        self.total_tokens += other.total_tokens
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.thought_tokens = _add_opt(self.thought_tokens, other.thought_tokens)
        self.cached_read_tokens = _add_opt(self.cached_read_tokens, other.cached_read_tokens)
        self.cached_write_tokens = _add_opt(self.cached_write_tokens, other.cached_write_tokens)


def _opt_int(value: Any) -> int | None:
    return value if isinstance(value, int) else None


def _add_opt(a: int | None, b: int | None) -> int | None:
    if b is None:
        return a
    return b if a is None else a + b
