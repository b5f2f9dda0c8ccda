"""``ActiveSession``: a cloneable command handle for one agent session, plus prompt tracking.

The handle holds only the session id and the connection; what the agent reported (background work, cancel
capabilities, prompts in flight) lives in the connection's per-session ``SessionTrack``, so every clone agrees.
All the handle asks of its connection is named by ``SessionLink`` (``ClientConnection`` implements it).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Generator, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast

import msgspec

from ._turn_state import OPEN_PROMPT_STATES, PROMPT_TABLE, PromptState
from .client_errors import CapabilityNotSupported, SessionClosed
from .codec import decoder
from .errors import AcpError, RequestCancelled, ResourceNotFound
from .protocol.capabilities import REQUIRED_CAPABILITY
from .rpc import PendingRequest
from .rpc.budget import DEFAULT_ANSWER_BUDGET
from .rpc.connection import DEFAULT_MAX_PARKED_REQUESTS
from .schema import unstable
from .schema.types import (
    AudioContent,
    BackgroundTerminal,
    BackgroundToolCall,
    CancelSessionNotification,
    CancelTerminalRequest,
    CancelTerminalResponse,
    CancelToolCallRequest,
    CancelToolCallResponse,
    CloseSessionRequest,
    CloseSessionResponse,
    ConfigOptionUpdate,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    PromptCapabilities,
    PromptResponse,
    ResourceLink,
    SessionConfigOption,
    SetSessionConfigOptionBooleanRequest,
    SetSessionConfigOptionResponse,
    SetSessionConfigOptionValueIdRequest,
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
    from .client import ClientConnection
    from .interactions import InteractionRegistry
    from .protocol.base import PromptExchange, ProtocolAdapter
    from .rpc import Connection

__all__ = [
    "ActiveSession",
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

    def __post_init__(self) -> None:
        for name in ("early_sessions", "early_updates", "cancellable", "parked_requests"):
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
        a prompt this way: ``ClientConnection.watch_prompt``)."""
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
    # Child session ids this session announced, oldest first (at most MAX_SUBAGENTS are tracked).
    subagents: dict[str, None] = field(default_factory=dict)

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
        elif isinstance(update, unstable.SubagentUpdate) and len(self.subagents) < MAX_SUBAGENTS:
            self.subagents[update.session_id] = None  # the connection makes the child's track

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
MAX_SUBAGENTS = 4096
"""Child sessions tracked per session: an agent announcing endless children cannot grow a connection past it."""
FINAL_TOOL_CALL_STATUSES = frozenset({"completed", "failed", "cancelled"})
"""Statuses after which a tool call does not run again; any other value (even an unknown one) is in progress."""


def _background_key(item: Any) -> tuple[str, str]:
    if isinstance(item, BackgroundToolCall):
        return ("tool_call", item.tool_call_id)
    if isinstance(item, BackgroundTerminal):
        return ("terminal", item.terminal_id)
    return ("unknown", msgspec.json.encode(item).decode())


def _still_running(ids: dict[str, None], background: frozenset[tuple[str, str]], kind: str) -> dict[str, None]:
    """The ids still cancellable once foreground work ended: those running in the background."""
    return {key: None for key in ids if (kind, key) in background}


_CLOSE = decoder(CloseSessionResponse)
_SET_TITLE = decoder(unstable.SetSessionTitleResponse)
_ARCHIVE = decoder(unstable.ArchiveSessionResponse)
_UNARCHIVE = decoder(unstable.UnarchiveSessionResponse)
_STATUS = decoder(unstable.SessionStatusResponse)
_SET_CONFIG = decoder(SetSessionConfigOptionResponse)


class SessionLink(Protocol):
    """All an ``ActiveSession`` asks of its connection (``ClientConnection`` implements it; internal to the package).

    The handle calls nothing else on the connection (tests/client/test_session_link.py checks both). These names
    are a contract inside the package, not public API: the API reference leaves them out (mkdocs.yml).
    """

    @property
    def rpc(self) -> Connection:
        """The JSON-RPC peer: a new prompt's cancel barrier is its count of requests received so far."""
        ...

    @property
    def interactions(self) -> InteractionRegistry:
        """The agent's interactive requests in progress: cancelling work or closing answers the session's."""
        ...

    @property
    def protocol(self) -> ProtocolAdapter:
        """The negotiated version's adapter: told when a session closes."""
        ...

    @property
    def session_tracks(self) -> Mapping[str, SessionTrack]:
        """Each session's track by id: read without creating one on every command's open-check."""
        ...

    def session_track(self, session_id: str, /) -> SessionTrack:
        """The session's track, made if there is none yet: where every clone of a handle keeps its state."""
        ...

    def supports(self, method: str, /) -> bool:
        """Whether the agent offers ``method``: ``close`` sends ``session/close`` only if it does."""
        ...

    def prompt_capabilities(self) -> PromptCapabilities | None:
        """The agent's prompt capabilities: which content blocks a prompt may carry (ACP2-084)."""
        ...

    def prompt_exchange(self, session_id: str, blocks: Sequence[ContentBlock], /) -> PromptExchange:
        """Send ``session/prompt`` the negotiated version's way (v1 also reports the user message itself)."""
        ...

    def watch_prompt(self, track: SessionTrack, prompt: TrackedPrompt, after: Callable[[], None], /) -> None:
        """Settle a tracked prompt when its answer is read, in wire order with the updates around it."""
        ...

    def auth_error(self, error: AcpError, method: str, /) -> AcpError:
        """A refusal for lack of login as ``AuthenticationRequired``: how a prompt's failure is reported."""
        ...

    def run_soon(self, fn: Callable[[Any], Any], arg: Any, /) -> None:
        """Run ``fn(arg)`` in the connection's task group: an expired prompt's ``session/cancel`` is sent there."""
        ...

    def rpc_request(
        self, method: str, params: Any, decode: Callable[[bytes], T], timeout: float | None = None, /
    ) -> PendingRequest[T]:
        """Send a request in the model types (the adapter maps it to the wire): the session's commands."""
        ...

    async def rpc_notify(self, method: str, params: Any, /) -> None:
        """Send a notification in the model types: ``session/cancel``."""
        ...

    def waiting_interactions(self, session_id: str, background: frozenset[tuple[str, str]], /) -> int:
        """Interactive requests read but not yet handled (declined once they start): ``cancel_active_work``'s count."""
        ...


class ActiveSession:
    """Command handle for one session; cheap to copy, every copy talks about the same remote session."""

    __slots__ = ("_conn", "_session_id")

    def __init__(self, connection: SessionLink, session_id: str) -> None:
        self._conn: SessionLink = connection
        self._session_id = session_id

    def __repr__(self) -> str:
        return f"<ActiveSession {self._session_id!r}>"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ActiveSession) and (other._conn, other._session_id) == (self._conn, self._session_id)

    def __hash__(self) -> int:
        return hash((id(self._conn), self._session_id))

    def clone(self) -> ActiveSession:
        return ActiveSession(self._conn, self._session_id)

    __copy__ = clone

    @property
    def session_id(self) -> str:
        return self._session_id

    @property
    def connection(self) -> ClientConnection:
        # Handles are made by a ClientConnection (its SessionLink): the connection is that object.
        return cast("ClientConnection", self._conn)

    @property
    def track(self) -> SessionTrack:
        return self._conn.session_track(self._session_id)

    @property
    def pending_prompts(self) -> list[TrackedPrompt]:
        """Prompts sent through this connection and not yet answered, oldest first."""
        return [p for p in self.track.prompts if p.status in OPEN_PROMPT_STATES]

    @property
    def prompts(self) -> list[TrackedPrompt]:
        """Recent prompts, including answered ones still waiting for (or joined to) their user message."""
        return list(self.track.prompts)

    def _check_open(self) -> SessionTrack:
        track = self._conn.session_tracks.get(self._session_id) or self.track
        if track.closed:
            raise SessionClosed(self._session_id)
        return track

    # -- prompts -----------------------------------------------------------------------------------------

    def send_prompt(self, text: str, *, timeout: float | None = None) -> SentRequest[PromptResponse]:
        """Send a text prompt now; the result is the accepted user message's id, not the agent's reply.

        ``timeout`` (seconds; None: no limit) bounds the wait for the answer: when it passes, the request is
        withdrawn (``$/cancel_request``), the turn is cancelled (``session/cancel``, and this session's
        foreground permission questions are answered cancelled, as ``cancel_active_work``) and awaiting the
        result raises ``RequestTimeout``; the prompt is then ``failed``."""
        return self.send_prompt_blocks([TextContent(text=text)], timeout=timeout)

    def send_prompt_blocks(
        self, blocks: Sequence[ContentBlock], *, timeout: float | None = None
    ) -> SentRequest[PromptResponse]:
        """Send prompt content now. Not gated on the session being idle: the agent holds prompts while busy.
        ``timeout``: see ``send_prompt``."""
        sent = self.send_tracked(blocks).request
        if timeout is not None:
            sent._pending.set_timeout(timeout)
        return sent

    def send_tracked(
        self,
        blocks: Sequence[ContentBlock],
        on_settle: Callable[[TrackedPrompt], None] | None = None,
        on_tracked: Callable[[TrackedPrompt], None] | None = None,
    ) -> TrackedPrompt:
        """Send a prompt and track it; ``on_tracked`` runs before anything about it can be reported
        (a protocol that reports the user message itself, v1, does so right after). ``Conversation.chat``'s
        entry point (internal: the API reference leaves it out); ``send_prompt_blocks`` is the public one."""
        track = self._check_open()
        prompt = _prepare_blocks(blocks, self._conn.prompt_capabilities())
        exchange = self._conn.prompt_exchange(self._session_id, prompt)
        exchange.request.on_expire(self._prompt_expired)
        conn = self._conn
        sent = SentRequest(exchange.request, lambda error: conn.auth_error(error, "session/prompt"))
        tracked = TrackedPrompt(sent, prompt, on_settle=on_settle)
        if track.cancel_barrier == math.inf:  # new work: requests read from now on are not the cancelled work's
            track.cancel_barrier = conn.rpc.requests_received
        tracked.message_id = exchange.message_id
        if track.state is not None and track.state != "idle":
            tracked.status = "held"  # the agent reports the session busy: it holds this prompt until then
        track.prompts.append(tracked)
        if on_tracked is not None:
            on_tracked(tracked)
        self._conn.watch_prompt(track, tracked, exchange.end)
        exchange.begin()
        return tracked

    def _prompt_expired(self, request: PendingRequest[Any]) -> None:
        """A prompt's time limit passed: stop its turn too, not only the request."""
        self._conn.run_soon(_cancel_quietly, self)

    def add_update_listener(self, listener: UpdateListener) -> Callable[[], None]:
        """Call ``listener`` inline for each of this session's updates (after tracking, before the builder's
        handler). It must not block; exceptions are logged. Returns a function that removes it."""
        return self.track.listen(listener, take_early=True)

    # -- work --------------------------------------------------------------------------------------------

    async def cancel_active_work(self) -> int:
        """Send ``session/cancel``, then answer this session's foreground interactive requests cancelled.

        Requests whose subject is in the latest background list are left alone: that work keeps running.
        Returns how many pending requests were cancelled locally. For a subagent (child) session, only when the
        parent's ``subagent_update`` advertises the child's ``capabilities.cancel`` (else
        ``CapabilityNotSupported``).
        """
        track = self._check_open()
        if track.parent is not None and not track.cancellable:
            raise CapabilityNotSupported("session/cancel", f"capabilities.cancel of subagent {self._session_id!r}")
        # A barrier, set before session/cancel is sent: every interactive request of this session read before the
        # cancelled work ends (the agent's idle, or our next prompt) is answered cancelled from now on, whether its
        # handler is running, waiting for a slot, or starts later (ClientConnection.declines).
        track.cancel_barrier = math.inf
        await self._conn.rpc_notify("session/cancel", CancelSessionNotification(session_id=self._session_id))
        background = track.background
        running = self._conn.interactions.cancel(self._session_id, keep=lambda item: item.subject_in(background))
        return running + self._conn.waiting_interactions(self._session_id, background)

    async def set_config_option(
        self, config_id: str, value: str | bool, *, timeout: float | None = None
    ) -> list[SessionConfigOption]:
        """Set an option (a value id for selects, a boolean for boolean options); returns the complete new list.
        ``timeout``: see ``ClientConnection.new_session``."""
        self._check_open()
        params: Any
        if isinstance(value, bool):
            params = SetSessionConfigOptionBooleanRequest(session_id=self._session_id, config_id=config_id, value=value)
        elif isinstance(value, str):
            params = SetSessionConfigOptionValueIdRequest(session_id=self._session_id, config_id=config_id, value=value)
        else:
            raise TypeError(f"config value must be a value id (str) or a bool, not {type(value).__name__}")
        pending = self._conn.rpc_request("session/set_config_option", params, _SET_CONFIG, timeout)
        track = self.track
        # The answer is the complete list (ACP2-033): record it where it sits on the wire, so a later
        # config_option_update still wins, and listeners (a Conversation's state) fold it like an update.
        pending.add_done_callback(track.answered_options)
        response = await pending
        return response.config_options

    async def set_mode(
        self, value: str, options: Sequence[Any] | None = None, *, timeout: float | None = None
    ) -> list[SessionConfigOption]:
        """Switch the session's mode: set the config option of category ``mode`` (for a v1 agent, its modes
        are that option, and this sends ``session/set_mode``). ``options`` is the current option list
        (e.g. ``Conversation.state.config_options``); by default the last one this connection saw."""
        return await self._set_category("mode", value, options, timeout)

    async def set_model(
        self, value: str, options: Sequence[Any] | None = None, *, timeout: float | None = None
    ) -> list[SessionConfigOption]:
        """Switch the session's model: set the config option of category ``model`` (v1: ``session/set_model``)."""
        return await self._set_category("model", value, options, timeout)

    async def _set_category(
        self, category: str, value: str, options: Sequence[Any] | None, timeout: float | None = None
    ) -> list[SessionConfigOption]:
        known = list(options) if options is not None else self._check_open().config_options
        option = option_of_category(known, category)
        if option is None:
            raise CapabilityNotSupported(f"set {category}", f"a config option of category {category!r}")
        return await self.set_config_option(option.config_id, value, timeout=timeout)

    @property
    def config_options(self) -> list[SessionConfigOption]:
        """The session's config options as last reported to this connection (session setup, updates, answers)."""
        return list(self.track.config_options)

    async def cancel_tool_call(self, tool_call_id: str, *, timeout: float | None = None) -> None:
        """Cancel one tool call; only allowed while its latest update advertises ``capabilities.cancel``."""
        track = self._check_open()
        if tool_call_id not in track.cancellable_tool_calls:
            raise CapabilityNotSupported("tool_call/cancel", f"capabilities.cancel on tool call {tool_call_id!r}")
        params = CancelToolCallRequest(session_id=self._session_id, tool_call_id=tool_call_id)
        await self._conn.rpc_request("tool_call/cancel", params, decoder(CancelToolCallResponse), timeout)

    async def cancel_terminal(self, terminal_id: str, *, timeout: float | None = None) -> None:
        """Cancel one terminal; only allowed while its latest update advertises ``capabilities.cancel``."""
        track = self._check_open()
        if terminal_id not in track.cancellable_terminals:
            raise CapabilityNotSupported("terminal/cancel", f"capabilities.cancel on terminal {terminal_id!r}")
        params = CancelTerminalRequest(session_id=self._session_id, terminal_id=terminal_id)
        await self._conn.rpc_request("terminal/cancel", params, decoder(CancelTerminalResponse), timeout)

    # -- Preview (unstable schema; each only when the agent advertises it) -------------------------------------

    def _preview(self, method: str) -> None:
        if not self._conn.supports(method):
            raise CapabilityNotSupported(method, REQUIRED_CAPABILITY.get(method, "it"))

    async def set_title(self, title: str, *, timeout: float | None = None) -> str:
        """``session/set_title`` (Preview, ``session.title``): returns the title the agent stored (it may
        normalise it); the agent also reports it with ``session_info_update``."""
        self._check_open()
        self._preview("session/set_title")
        params = unstable.SetSessionTitleRequest(session_id=self._session_id, title=title)
        response = await self._conn.rpc_request("session/set_title", params, _SET_TITLE, timeout)
        return response.title

    async def archive(self, *, timeout: float | None = None) -> None:
        """``session/archive`` (Preview, ``session.archive``): hide the session from default listings."""
        self._preview("session/archive")
        params = unstable.ArchiveSessionRequest(session_id=self._session_id)
        await self._conn.rpc_request("session/archive", params, _ARCHIVE, timeout)

    async def unarchive(self, *, timeout: float | None = None) -> None:
        """``session/unarchive`` (Preview, ``session.archive``)."""
        self._preview("session/unarchive")
        params = unstable.UnarchiveSessionRequest(session_id=self._session_id)
        await self._conn.rpc_request("session/unarchive", params, _UNARCHIVE, timeout)

    async def status(self, *, timeout: float | None = None) -> unstable.SessionStatusResponse:
        """``session/status`` (Preview, ``session.status``): ``open`` (in the agent's memory) or ``saved`` (an
        unknown value counts as ``saved``), with a foreground-state snapshot that is never a new completion."""
        self._preview("session/status")
        params = unstable.SessionStatusRequest(session_id=self._session_id)
        response = await self._conn.rpc_request("session/status", params, _STATUS, timeout)
        if response.status not in unstable.SESSION_STATUS_VALUES:
            response = msgspec.structs.replace(response, status="saved")
        return response

    async def close(self, *, timeout: float | None = None) -> None:
        """Close the remote session. Idempotent: closing twice, or a -32002 answer, counts as success."""
        track = self.track
        if track.closed:
            return
        if self._conn.supports("session/close"):
            with suppress(ResourceNotFound):  # an older agent's answer for an unknown or closed session (ACP2-074)
                request = CloseSessionRequest(session_id=self._session_id)
                await self._conn.rpc_request("session/close", request, _CLOSE, timeout)
        elif any(p.status in OPEN_PROMPT_STATES for p in track.prompts):
            # A v1 agent without session/close: stop the session's work, then forget it locally.
            await self._conn.rpc_notify("session/cancel", CancelSessionNotification(session_id=self._session_id))
        track.closed = True
        self._conn.interactions.cancel(self._session_id)
        self._conn.protocol.session_closed(self._session_id)


async def _cancel_quietly(session: ActiveSession) -> None:
    with suppress(AcpError):  # closed meanwhile, or the connection ended: nothing left to stop
        await session.cancel_active_work()


_NEEDS: dict[type, str] = {ImageContent: "image", AudioContent: "audio", EmbeddedResource: "embedded_context"}


def _prepare_blocks(blocks: Sequence[ContentBlock], caps: PromptCapabilities | None) -> list[ContentBlock]:
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
