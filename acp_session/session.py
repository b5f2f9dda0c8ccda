"""What a connection knows about each session, sans-IO: its ``SessionTrack`` (state, background work, cancel
capabilities, prompts in flight), each ``TrackedPrompt``, the ``Limits`` a connection keeps, and ``SentRequest``.

The connection's hub keeps one track per session and drives it (``apply`` each tracked update, ``begin_prompt``,
``settle``); the command handle, ``ActiveSession`` (``acp_session.client.active_session``), reads it, so every
clone of a handle agrees. Nothing here calls a connection.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Generator, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import msgspec

from ._turn_state import OPEN_PROMPT_STATES, PROMPT_TABLE, PromptState
from .client_errors import CapabilityNotSupported, SessionLost
from .errors import AcpError, RequestCancelled
from .rpc import PendingRequest
from .rpc.budget import DEFAULT_ANSWER_BUDGET
from .rpc.connection import DEFAULT_MAX_PARKED_REQUESTS
from .schema import unstable
from .schema.types import (
    AudioContent,
    BackgroundTerminal,
    BackgroundToolCall,
    ConfigOptionUpdate,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    PromptCapabilities,
    PromptResponse,
    ResourceLink,
    SetSessionConfigOptionResponse,
    StateUpdate,
    TerminalUpdate,
    TextContent,
    ToolCallUpdated,
    UpdateSessionNotification,
    UserMessage,
    UserMessageChunk,
)
from .update_kinds import TRACKED_UPDATES

if TYPE_CHECKING:
    from .interactions import ReaderMark

__all__ = [
    "BatchUpdateListener",
    "PromptStatus",
    "SentRequest",
    "SessionTrack",
    "TrackedPrompt",
    "TRACKED_UPDATES",
    "UpdateListener",
    "clean_text",
]

T = TypeVar("T")
UpdateListener = Callable[[UpdateSessionNotification], None]
"""A session-scoped, synchronous update listener: runs inline in the reader, so it must be cheap."""


@dataclass(frozen=True, slots=True)
class BatchUpdateListener:
    """An update listener that can also take a run of consecutive updates in one call.

    When it is a session's only listener and no application update handler is set, the connection hands it
    each run of its session's updates that one read brought in as ``many(notes)``, after tracking them
    (``SessionTrack.apply``), exactly where it would have called ``one`` for each. ``many`` must give the
    result ``one`` gives note by note. Nothing flows back: the route is rpc → connection (tracking) →
    listener. That saves several calls per update on long streams of chunks.
    """

    one: UpdateListener
    many: Callable[[list[UpdateSessionNotification]], None]

    def __call__(self, note: UpdateSessionNotification) -> None:
        self.one(note)


@dataclass(frozen=True)
class Limits:
    """What one connection keeps at most, whatever the agent sends (``ClientBuilder.limits``; docs/robustness.md).
    Per session: past a limit the oldest go; nothing the application asked for is dropped. Per connection
    (``answer_bytes``, ``parked_requests``): past a limit the client waits, nothing is dropped."""

    early_sessions: int = 16
    """Unknown sessions whose updates are kept while a ``session/new`` is in flight (one may be the new one)."""
    early_updates: int = 10_000
    """Updates kept for each of those sessions until a listener takes them."""
    cancellable: int = 10_000
    """Tool calls (and, apart, terminals) of a session remembered as cancellable at once (the newest)."""
    answer_bytes: int = DEFAULT_ANSWER_BUDGET
    """Bytes of large answers to the agent's requests (file contents, terminal output) built or queued at once,
    counted as encoded JSON (64 MiB). More waits until earlier ones are written; one larger than this is sent
    alone (``acp_session.rpc.budget``)."""
    parked_requests: int = DEFAULT_MAX_PARKED_REQUESTS
    """Requests that only wait for an event (``terminal/wait_for_exit``) run at once without a concurrency slot,
    up to this many (4 096), so a pile of them never stops the client reading the agent's other messages."""
    subagents: int = 1024
    """Subagent (child) sessions kept: tracked per connection, and folded per ``Conversation`` tree. Past it a new
    child takes the place of the oldest finished one (its state reported idle), which is folded into its
    parent's ``folded_subagents`` summary with everything below it; while every kept child still runs, a new
    one is refused (counted, one warning): its updates reach only ``on_session_update``. The parent's own
    history is never touched."""

    def __post_init__(self) -> None:
        for name in ("early_sessions", "early_updates", "cancellable", "parked_requests", "subagents"):
            if getattr(self, name) < 0:
                raise ValueError(f"Limits.{name} must not be negative")
        if self.answer_bytes < 1:
            raise ValueError("Limits.answer_bytes must be at least 1")

    def connection_options(self) -> dict[str, int]:
        """The ``rpc.Connection`` options these limits set."""
        return {"answer_budget": self.answer_bytes, "max_parked_requests": self.parked_requests}


DEFAULT_LIMITS = Limits()
PromptStatus = PromptState
"""pending -> held -> inserted, cancelled or failed: ``acp_session._turn_state.PROMPT_TABLE``."""

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")  # every C0 control and DEL except tab and newline


def clean_text(text: str) -> str:
    """Strip control characters other than newline and tab from prompt text."""
    return _CONTROL.sub("", text)


class SentRequest(Generic[T]):
    """A request already sent: ``await`` it for the result; ``cancel()`` sends ``$/cancel_request``.

    A time limit (the ``timeout`` it was sent with, or ``result(timeout=...)``) applies while it is awaited:
    when it passes, ``$/cancel_request`` is sent (for a prompt also ``session/cancel``) and ``RequestTimeout``
    raised; a late answer is dropped.
    """

    __slots__ = ("_pending", "_translate")

    def __init__(self, pending: PendingRequest[T], translate: Callable[[AcpError], AcpError] | None = None) -> None:
        self._pending = pending
        self._translate = translate  # e.g. a refusal for lack of login into AuthenticationRequired

    @property
    def id(self) -> int | str:
        return self._pending.id

    @property
    def method(self) -> str:
        return self._pending.method

    def add_done_callback(self, fn: Callable[[PendingRequest[T]], None]) -> None:
        """Call ``fn`` with the rpc request the moment its answer is read, in wire order (the connection settles
        a prompt this way: ``ConnectionHub.send_prompt``)."""
        self._pending.add_done_callback(fn)

    @property
    def done(self) -> bool:
        return self._pending.done

    def cancel(self) -> None:
        """Withdraw the request; the agent still answers (a held prompt: -32800 -> ``RequestCancelled``)."""
        self._pending.cancel()

    async def result(self, timeout: float | None = None) -> T:
        """The result; ``timeout`` (seconds from now) replaces the time limit the request was sent with."""
        if timeout is not None:
            self._pending.set_timeout(timeout)
        return await self

    def __await__(self) -> Generator[Any, None, T]:
        if self._translate is None:
            return self._pending.__await__()
        return self._translated()

    def _translated(self) -> Generator[Any, None, T]:
        assert self._translate is not None
        try:
            return (yield from self._pending.__await__())
        except AcpError as exc:
            translated = self._translate(exc)
            if translated is exc:
                raise
            raise translated from None


@dataclass(eq=False)
class TrackedPrompt:
    """One prompt: pending -> held (the agent is busy, so it waits) -> inserted or cancelled (or failed)."""

    request: SentRequest[PromptResponse]
    blocks: list[ContentBlock]
    status: PromptStatus = "pending"
    message_id: str | None = None
    user_message: UserMessage | None = None
    error: AcpError | None = None
    on_settle: Callable[[TrackedPrompt], None] | None = None


@dataclass(eq=False)
class SessionTrack:
    """What this connection knows about one session from the agent's updates (no conversation history)."""

    session_id: str
    closed: bool = False
    # The agent lost the session while the connection reconnected (a Conversation's recovery found it gone): every
    # later call on it raises SessionLost again, until a resume of it succeeds.
    lost: SessionLost | None = None
    state: str | None = None
    background: frozenset[tuple[str, str]] = frozenset()
    # Ids whose latest update advertises capabilities.cancel, oldest first (dicts as ordered sets, at most
    # max_cancellable each: an agent inventing ids cannot grow them).
    cancellable_tool_calls: dict[str, None] = field(default_factory=dict)
    cancellable_terminals: dict[str, None] = field(default_factory=dict)
    max_cancellable: int = DEFAULT_LIMITS.cancellable
    config_options: list[Any] = field(default_factory=list)
    # Receipt number (Connection.requests_received) before which interactive requests are declined: -1 without
    # a cancellation, inf while cancelled work has not ended yet.
    cancel_barrier: float = -1.0
    # Called with each set_config_option answer (a Conversation folds it into its state).
    option_listeners: list[Callable[[SetSessionConfigOptionResponse], None]] = field(default_factory=list)
    # Called with (path, content) after each fs/write_text_file the client performed for this session
    # (the file-system provider returned; a Conversation reports it as a ChatFile of the current turn).
    file_listeners: list[Callable[[str, str], None]] = field(default_factory=list)
    # Where the readers of this session's events stand (a Conversation: its turns' and streams' ReaderMarks):
    # an interactive request of the session waits for them first (interactions.readers_caught_up).
    readers: list[Callable[[], list[ReaderMark]]] = field(default_factory=list)
    prompts: list[TrackedPrompt] = field(default_factory=list)
    unjoined: dict[str, UserMessage] = field(default_factory=dict)  # user messages not matched to a prompt yet
    listeners: list[UpdateListener] = field(default_factory=list)
    # Updates that arrived while a session/new was in flight and before anyone listened: handed to the
    # first listener, so a Conversation opened with the session sees what came before the response.
    early: list[UpdateSessionNotification] | None = None
    # A subagent (child) session's parent, from the parent's subagent_update (Preview); None for a session of ours.
    parent: str | None = None
    # The child advertises capabilities.cancel (the parent's latest subagent_update says so).
    cancellable: bool = False
    # Child session ids this session announced whose tracks the connection keeps, oldest first (at most
    # Limits.subagents per connection; the connection makes them: _updates.UpdateRouting._child_track).
    subagents: dict[str, None] = field(default_factory=dict)
    # Each tool call's kind and paths as its updates reported them, the newest MAX_TOOL_FACTS calls: what a
    # PermissionPolicy judges when a permission request names only the tool call's id.
    tool_facts: dict[str, tuple[str | None, tuple[str, ...]]] = field(default_factory=dict)

    def listen(self, listener: UpdateListener, *, take_early: bool = True) -> Callable[[], None]:
        """Add a listener (fed the early backlog first); returns a function that removes it."""
        early, self.early = self.early, None
        if take_early and early:
            for note in early:
                listener(note)
        self.listeners.append(listener)
        return self.unlisten_fn(listener)

    def answered_options(self, answered: PendingRequest[SetSessionConfigOptionResponse]) -> None:
        """A ``session/set_config_option`` answer, read in wire order: the session's complete option list."""
        try:
            response = answered.outcome()
        except AcpError:
            return
        self.config_options = list(response.config_options)
        for listener in list(self.option_listeners):
            listener(response)

    def wrote_file(self, path: str, content: str) -> None:
        """The client wrote ``content`` to ``path`` for this session's agent (``fs/write_text_file``)."""
        for listener in list(self.file_listeners):
            listener(path, content)

    def unlisten_fn(self, listener: UpdateListener) -> Callable[[], None]:
        """A function that removes ``listener`` (idempotent)."""

        def remove() -> None:
            with suppress(ValueError):
                self.listeners.remove(listener)

        return remove

    def apply(self, note: UpdateSessionNotification) -> None:
        """Record what the handle needs; only updates of a ``TRACKED_UPDATES`` type change anything."""
        update = note.update
        if isinstance(update, _STATE_UPDATES):
            self.state = update.state
            items = update.background if isinstance(update.background, list) else []
            self.background = frozenset(_background_key(item) for item in items)
            if update.state in ("running", "requires_action"):
                for prompt in self.prompts:
                    if prompt.status in OPEN_PROMPT_STATES:
                        prompt.status = PROMPT_TABLE.next(prompt.status, "busy")
            elif update.state == "idle":
                # Foreground work ended: only what still runs in the background can be cancelled now.
                self.cancellable_tool_calls = _still_running(self.cancellable_tool_calls, self.background, "tool_call")
                self.cancellable_terminals = _still_running(self.cancellable_terminals, self.background, "terminal")
        elif isinstance(update, ToolCallUpdated):
            self._note_tool_facts(update)
            if update.status in FINAL_TOOL_CALL_STATUSES:
                self.cancellable_tool_calls.pop(update.tool_call_id, None)  # it ended: nothing left to cancel
            else:
                self._patch_cancel(self.cancellable_tool_calls, update.tool_call_id, update.capabilities)
        elif isinstance(update, TerminalUpdate):
            if isinstance(update.exit_status, msgspec.Struct):
                self.cancellable_terminals.pop(update.terminal_id, None)  # it exited
            else:
                self._patch_cancel(self.cancellable_terminals, update.terminal_id, update.capabilities)
        elif isinstance(update, UserMessage):
            self._join(update)
        elif isinstance(update, UserMessageChunk):
            self._join_chunk(update)
        elif isinstance(update, ConfigOptionUpdate):
            self.config_options = list(update.config_options)

    def _note_tool_facts(self, update: ToolCallUpdated) -> None:
        kind, paths = self.tool_facts.pop(update.tool_call_id, (None, ()))
        if isinstance(update.kind, str):
            kind = update.kind
        if isinstance(update.locations, list):
            paths = tuple(location.path for location in update.locations)
        self.tool_facts[update.tool_call_id] = (kind, paths)
        if len(self.tool_facts) > MAX_TOOL_FACTS:
            del self.tool_facts[next(iter(self.tool_facts))]

    def _patch_cancel(self, ids: dict[str, None], item_id: str, capabilities: Any) -> None:
        if capabilities is msgspec.UNSET:
            return  # omitted in a patch: unchanged
        cancel = getattr(capabilities, "cancel", None)
        if cancel is None or cancel is msgspec.UNSET:
            ids.pop(item_id, None)
        elif item_id not in ids:
            ids[item_id] = None
            if len(ids) > self.max_cancellable:
                del ids[next(iter(ids))]  # the oldest: cancel_tool_call on it raises CapabilityNotSupported

    def _join(self, message: UserMessage) -> None:
        for prompt in self.prompts:
            if prompt.message_id == message.message_id:
                prompt.user_message = message
                if prompt.status not in ("pending", "held"):
                    self.prompts.remove(prompt)  # answered and joined: nothing left to wait for
                return
        self.unjoined[message.message_id] = message
        while len(self.unjoined) > 256:  # replayed history can be long; keep only recent ones
            self.unjoined.pop(next(iter(self.unjoined)))

    def _join_chunk(self, chunk: UserMessageChunk) -> None:
        """A prompt echoed as ``user_message_chunk``s (codex-acp does): the chunks make up its user message."""
        for prompt in self.prompts:
            if prompt.message_id == chunk.message_id:
                if prompt.user_message is None:
                    self._join(UserMessage(message_id=chunk.message_id, content=[chunk.content]))
                elif isinstance(prompt.user_message.content, list):
                    prompt.user_message.content.append(chunk.content)
                return
        known = self.unjoined.get(chunk.message_id)
        if known is not None and isinstance(known.content, list):
            known.content.append(chunk.content)
        else:
            self._join(UserMessage(message_id=chunk.message_id, content=[chunk.content]))

    def begin_prompt(self, prompt: TrackedPrompt, requests_received: int) -> None:
        """A prompt was sent: track it. New work after a cancel: interactive requests read from now on
        (``requests_received``, the connection's count) are not the cancelled work's. A session the agent reports
        busy holds the prompt until it is idle again."""
        if self.cancel_barrier == math.inf:
            self.cancel_barrier = requests_received
        if self.state is not None and self.state != "idle":
            prompt.status = "held"
        self.prompts.append(prompt)

    def settle(self, prompt: TrackedPrompt, response: PromptResponse | None, error: AcpError | None) -> None:
        """Record a prompt's answer and join it to its user message if that arrived first."""
        if response is not None:
            prompt.status = PROMPT_TABLE.next(prompt.status, "inserted")
            prompt.message_id = response.message_id
            prompt.user_message = self.unjoined.pop(response.message_id, prompt.user_message)
        else:
            prompt.status = PROMPT_TABLE.next(
                prompt.status, "cancelled" if isinstance(error, RequestCancelled) else "failed"
            )
            prompt.error = error
        if prompt.on_settle is not None:
            prompt.on_settle(prompt)
        # Keep the answered ones whose user message has not arrived yet, so the join still happens.
        self.prompts = [p for p in self.prompts if p.status in OPEN_PROMPT_STATES or p.user_message is None]
        del self.prompts[:-512]


_STATE_UPDATES = (StateUpdate, unstable.StateUpdate)
FINAL_TOOL_CALL_STATUSES = frozenset({"completed", "failed", "cancelled"})
"""Statuses after which a tool call does not run again; any other value (even an unknown one) is in progress."""
MAX_TOOL_FACTS = 1024
"""How many tool calls' kinds and paths a session's track keeps for permission policies."""


def _background_key(item: Any) -> tuple[str, str]:
    if isinstance(item, BackgroundToolCall):
        return ("tool_call", item.tool_call_id)
    if isinstance(item, BackgroundTerminal):
        return ("terminal", item.terminal_id)
    return ("unknown", msgspec.json.encode(item).decode())


def _still_running(ids: dict[str, None], background: frozenset[tuple[str, str]], kind: str) -> dict[str, None]:
    """The ids still cancellable once foreground work ended: those running in the background."""
    return {key: None for key in ids if (kind, key) in background}


_NEEDS: dict[type, str] = {ImageContent: "image", AudioContent: "audio", EmbeddedResource: "embedded_context"}


def prepare_blocks(blocks: Sequence[ContentBlock], caps: PromptCapabilities | None) -> list[ContentBlock]:
    """Validate prompt content locally: non-empty (ACP2-085) and allowed by the prompt capabilities (ACP2-084)."""
    out: list[ContentBlock] = []
    for block in blocks:
        if isinstance(block, TextContent):
            text = clean_text(block.text)
            if text:
                out.append(msgspec.structs.replace(block, text=text))
            continue
        if isinstance(block, ResourceLink):
            out.append(block)
            continue
        needed = _NEEDS.get(type(block))
        if needed is None:
            raise CapabilityNotSupported("session/prompt", f"content block {type(block).__name__}")
        if caps is None or getattr(caps, needed) in (None, msgspec.UNSET):
            raise CapabilityNotSupported("session/prompt", f"session.prompt.{needed}")
        out.append(block)
    if not out:
        raise ValueError("a prompt needs at least one non-empty content block")
    return out


def option_of_category(options: Sequence[Any], category: str) -> Any:
    """The first config option of ``category`` (a category is only a hint: ACP2-033), or None."""
    for option in options:
        if not isinstance(option, dict) and getattr(option, "category", None) == category:
            return option
    return None


def current_of_category(options: Sequence[Any], category: str) -> str | None:
    """The current value of the first option of ``category``, when it is a value id."""
    option = option_of_category(options, category)
    value = None if option is None else option.current_value
    return value if isinstance(value, str) else None
