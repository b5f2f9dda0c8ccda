"""``Conversation``: a ``SessionState`` kept current from one session's updates, plus chat turns.

The fold runs inline in the connection's reader through a session-scoped listener (no task per
update). Each fold event is routed to the chat turn that owns it:

* a turn starts when its prompt is inserted: the ``session/prompt`` answer or its ``user_message``,
  whichever is seen first (only the ``user_message`` when the protocol reports it itself, as the v1 adapter
  does when the turn starts: ``ChatTurn.reported_start``). If a user message arrives before any answer
  names it while our prompts are unanswered, the events after it are held in a segment until an answer
  claims it (ours) or every prompt is answered (someone else's);
* events go to the most recently started unfinished turn; tool calls in the reported background
  list never belong to a turn;
* a new idle completion (``StateChanged.completed``) finishes every started turn; prompts still
  held by the agent start later, with their own insertion.

Each turn's step is ``ChatTurn.state``, moved only along ``acp_session._turn_state.TURN_TABLE`` (sent, accepted,
held, started, finished, failed); the lists below keep the order of the turns in each step.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from typing import TYPE_CHECKING, Any

import anyio

from acp_session.client.connection import hub_of
from acp_session.client.opening import open_forked_session, open_new_session, open_resumed_session
from acp_session.client_errors import CapabilityNotSupported, SessionClosed
from acp_session.conversation.chat_events import ChatResponse
from acp_session.conversation.entities import Message
from acp_session.conversation.events import MessageChanged, StateEvent
from acp_session.conversation.recovery import ReconnectRecovery
from acp_session.conversation.routing import Segment
from acp_session.conversation.state import SessionState, Subagent
from acp_session.conversation.streams import (
    DEFAULT_STREAM_BUFFER,
    ChunkStream,
    OverflowPolicy,
    StepStream,
    _Hub,
    open_stream,
)
from acp_session.conversation.turn import ChatTurn
from acp_session.conversation.view import ConversationView, IdleTimeout, TurnTimeout
from acp_session.errors import AcpError, ConnectionClosed
from acp_session.mcp.servers import McpServerConfig
from acp_session.schema import (
    ContentBlock,
    NewSessionResponse,
    ReplayFrom,
    ResumeSessionResponse,
    SetSessionConfigOptionResponse,
    TextContent,
    UpdateSessionNotification,
)
from acp_session.session import BatchUpdateListener

if TYPE_CHECKING:
    from acp_session.client import ClientBuilder, ClientConnection, SystemPromptInput
    from acp_session.client.active_session import ActiveSession
    from acp_session.registry import AgentCommand
    from acp_session.session import TrackedPrompt

__all__ = ["DEFAULT_MAX_HISTORY", "Conversation", "IdleTimeout", "TurnTimeout"]

DEFAULT_MAX_HISTORY = 10_000
_SPAWNED_CLOSE_TIMEOUT = 10.0  # leaving Conversation.spawn's block: how long the session's close may take


class Conversation(ConversationView, ReconnectRecovery):
    """Chat over one ``ActiveSession``: ``chat`` / ``chat_to_completion``, history and usage.

    ``max_history_size``: None keeps the newest 10 000 timeline entries, 0 keeps everything.
    """

    def __init__(
        self,
        session: ActiveSession | None = None,
        *,
        max_history_size: int | None = None,
        state: SessionState | None = None,
    ) -> None:
        if max_history_size is not None and max_history_size < 0:
            raise ValueError("max_history_size must be None, 0 (unlimited) or positive")
        self.max_history_size = DEFAULT_MAX_HISTORY if max_history_size is None else max_history_size
        self.state = state if state is not None else SessionState(None if session is None else session.session_id)
        self._apply = self.state.apply
        # What the session calls for each update; a run of updates from one read goes to _on_notes at once.
        self._listener = BatchUpdateListener(self._on_note, self._on_notes)
        self._session: ActiveSession | None = None
        self._detach: Callable[[], None] | None = None
        self._awaiting: list[ChatTurn] = []  # sent, not inserted yet, in send order
        self._active: list[ChatTurn] = []  # inserted, not finished, in start order
        self._segments: list[Segment] = []
        self._receiver: Any = None  # where routed events go: the newest active turn, a segment, or None
        self._background: frozenset[str] = frozenset()
        self._times: dict[tuple[str, str], float] = {}
        self._turns_total = 0
        self._last_response: ChatResponse | None = None
        self._idle = anyio.Event()
        self._idle.set()
        self._closed: AcpError | None = None  # why no more turns: the connection closed, the session was lost
        self._scope: anyio.CancelScope | None = None
        self._streams: _Hub | None = None  # feeds the open receive_steps() / receive_chunks() streams
        self._owned: ClientConnection | None = None  # the connection Conversation.spawn made for this conversation
        self._disconnected = False
        # The session's MCP servers and extra roots, sent again by reconnect() (a resume must repeat them).
        self._mcp_servers: list[McpServerConfig] = []
        self._additional_directories: list[str | os.PathLike[str]] = []
        self._attempt = 0
        if session is not None:
            session.add_update_listener(self._listener)
            self._bind(session)

    # ------------------------------------------------------------------ opening

    @classmethod
    async def open(
        cls,
        client: ClientConnection,
        cwd: str | os.PathLike[str],
        *,
        mcp_servers: Sequence[McpServerConfig] = (),
        additional_directories: Sequence[str | os.PathLike[str]] = (),
        max_history_size: int | None = None,
        system_prompt: SystemPromptInput | None = None,
        system_prompt_mode: str = "append",
    ) -> Conversation:
        """``session/new`` with this conversation listening from the first update (``start_conversation``);
        ``system_prompt`` (Preview): see ``ClientConnection.new_session``."""
        conversation = cls(max_history_size=max_history_size)
        conversation.state.max_subagents = client.limits.subagents
        session, response = await open_new_session(
            hub_of(client),
            cwd,
            mcp_servers,
            additional_directories,
            listener=conversation._listener,
            system_prompt=system_prompt,
            system_prompt_mode=system_prompt_mode,
        )
        conversation._remember(mcp_servers, additional_directories)
        conversation._opened(session, response)
        return conversation

    async def fork(
        self,
        cwd: str | os.PathLike[str],
        *,
        mcp_servers: Sequence[McpServerConfig] = (),
        additional_directories: Sequence[str | os.PathLike[str]] = (),
        system_prompt: SystemPromptInput | None = None,
        system_prompt_mode: str = "append",
        max_history_size: int | None = None,
    ) -> Conversation:
        """``session/fork`` (Preview, ``session.fork``): a new conversation on a new session that starts from this
        one's context; its history starts as a copy of this one's (the agent does not replay it), and from then on
        the two go their own ways. This conversation and its session are unchanged."""
        client = self.session.connection
        session_id = self.session.session_id
        client.agent.require("session/fork")
        state = self.state.copy(None)
        state.max_subagents = client.limits.subagents
        conversation = Conversation(
            max_history_size=self.max_history_size if max_history_size is None else max_history_size, state=state
        )
        session, response = await open_forked_session(
            hub_of(client),
            session_id,
            cwd,
            mcp_servers,
            additional_directories,
            listener=conversation._listener,
            system_prompt=system_prompt,
            system_prompt_mode=system_prompt_mode,
        )
        answer = NewSessionResponse(
            session_id=response.session_id,
            config_options=response.config_options,
            available_commands=response.available_commands,
        )
        conversation._opened(session, answer)
        conversation._remember(mcp_servers, additional_directories)  # reconnect() re-sends the fork's own
        return conversation

    def _opened(self, session: ActiveSession, response: NewSessionResponse) -> None:  # also a fork's answer
        self.state.apply_new_session_response(response)
        self._bind(session)

    @classmethod
    @asynccontextmanager
    async def spawn(
        cls,
        argv: str | Sequence[str] | AgentCommand,
        cwd: str | os.PathLike[str],
        *,
        builder: ClientBuilder | None = None,
        mcp_servers: Sequence[McpServerConfig] = (),
        additional_directories: Sequence[str | os.PathLike[str]] = (),
        max_history_size: int | None = None,
        agent_cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        **spawn_options: Any,
    ) -> AsyncIterator[Conversation]:
        """Start the agent ``argv`` (a command, or a registry id: see ``ClientBuilder.spawn``) and a session in
        ``cwd`` on a connection this conversation owns (``owns_connection``): ``disconnect()``, and leaving the
        block, close the session and then the connection, which shuts the agent down as ``ClientBuilder.spawn``
        does. (A conversation that ``reconnect()`` moved to another connection owns none: leaving the block
        closes only the one it made.) ``builder`` configures the client (default ``ClientBuilder()``);
        ``agent_cwd`` (the agent process's working directory), ``env`` and ``spawn_options`` go to
        ``ClientBuilder.spawn``."""
        from acp_session.client import ClientBuilder

        async with (builder or ClientBuilder()).spawn(argv, agent_cwd, env, **spawn_options) as client:
            conversation = await cls.open(
                client,
                cwd,
                mcp_servers=mcp_servers,
                additional_directories=additional_directories,
                max_history_size=max_history_size,
            )
            conversation._owned = client
            try:
                yield conversation
            finally:
                if conversation.owns_connection:  # not moved to another connection by reconnect()
                    with anyio.move_on_after(_SPAWNED_CLOSE_TIMEOUT, shield=True):
                        await conversation.disconnect()

    @classmethod
    async def resume(
        cls,
        client: ClientConnection,
        session_id: str,
        cwd: str | os.PathLike[str],
        *,
        replay_from: ReplayFrom | str | None = "start",
        max_history_size: int | None = None,
        mcp_servers: Sequence[McpServerConfig] = (),
        additional_directories: Sequence[str | os.PathLike[str]] = (),
    ) -> Conversation:
        """``session/resume`` into a fresh conversation; with replay it holds the agent's history.

        ``mcp_servers`` and ``additional_directories`` are sent with the resume (an agent does not keep a
        session's MCP servers across connections) and again by each later ``reconnect()``."""
        conversation = cls(max_history_size=max_history_size, state=SessionState(session_id))
        conversation._remember(mcp_servers, additional_directories)
        await conversation._resume(client, session_id, cwd, replay_from)
        return conversation

    async def reconnect(
        self,
        client: ClientConnection,
        cwd: str | os.PathLike[str],
        *,
        replay_from: ReplayFrom | str | None = "start",
        mcp_servers: Sequence[McpServerConfig] | None = None,
        additional_directories: Sequence[str | os.PathLike[str]] | None = None,
    ) -> None:
        """Continue on a new connection (after the old transport died): resume, replaying onto this state.

        Replay rebuilds every entity from what the agent reports, so afterwards the state equals the
        agent's; turns of the old connection already ended with ``ConnectionClosed``. The session's MCP servers
        and additional directories (``mcp_servers``), as given when it was opened or last resumed, are sent
        again; pass either to replace them.
        """
        session_id = self.session_id
        if session_id is None:
            raise AcpError("this conversation has no session to resume")
        if mcp_servers is not None or additional_directories is not None:
            self._remember(
                self._mcp_servers if mcp_servers is None else mcp_servers,
                self._additional_directories if additional_directories is None else additional_directories,
            )
        self._unbind(ConnectionClosed("reconnecting on a new connection"))
        await self._resume(client, session_id, cwd, replay_from)

    def _remember(
        self, mcp_servers: Sequence[McpServerConfig], additional_directories: Sequence[str | os.PathLike[str]]
    ) -> None:
        self._mcp_servers = list(mcp_servers)
        self._additional_directories = list(additional_directories)

    async def _resume(
        self, client: ClientConnection, session_id: str, cwd: str | os.PathLike[str], replay_from: Any
    ) -> None:
        self.state.max_subagents = client.limits.subagents
        self.state.begin_resume(replay=replay_from is not None)
        try:
            session, response = await open_resumed_session(
                hub_of(client),
                session_id,
                cwd,
                replay_from,
                self._mcp_servers,
                self._additional_directories,
                listener=self._listener,
            )
        except BaseException:
            self.state.apply_resume_response(ResumeSessionResponse())  # close the resume window
            raise
        self._emit(self.state.apply_resume_response(response))
        self._closed = None
        self._bind(session)
        self._trim()

    def _bind(self, session: ActiveSession) -> None:
        """Record the session (the listener is already installed) and watch its connection."""
        self._session = session
        track = session.track
        remove_updates = track.unlisten_fn(self._listener)
        track.option_listeners.append(self._on_options_answer)
        track.file_listeners.append(self._on_file_written)
        track.readers.append(self._reader_marks)  # a permission question waits for them (interactions.py)

        def detach() -> None:
            remove_updates()
            with suppress(ValueError):
                track.option_listeners.remove(self._on_options_answer)
            with suppress(ValueError):
                track.file_listeners.remove(self._on_file_written)
            with suppress(ValueError):
                track.readers.remove(self._reader_marks)

        self._detach = detach
        self._closed = None
        self._disconnected = False
        self._register_recovery(session)  # a connection that comes back after a drop resumes it (recovery.py)
        hub_of(session.connection).start_soon(self._watch_connection, session.connection)

    def _unbind(self, error: BaseException) -> None:
        self._unregister_recovery()
        self._stop_listening()
        self._fail_all(error)

    async def _watch_connection(self, client: ClientConnection) -> None:
        with anyio.CancelScope() as scope:
            self._scope = scope
            rpc = client.rpc
            try:
                error = await rpc.wait_closed()
            except anyio.get_cancelled_exc_class():
                # Not _unbind: the client's block is being left, so the connection closes next. A stream consumer
                # may live outside that block: its stream ends now rather than never.
                if not scope.cancel_called and self._streams is not None:
                    self._streams.end(ConnectionClosed("the connection is closing"))
                raise
            reconnector = hub_of(client).reconnector
            if reconnector is not None and reconnector.will_retry(rpc):
                return  # the turns wait: recover() settles them from the agent's replay, or the policy gives up
            if self._session is not None and self._session.connection is client:
                # Answers that arrived but whose watcher task has not run yet still start their turns, so
                # the updates that followed them are attributed before everything fails.
                for turn in list(self._awaiting):
                    request = turn.prompt.request if turn.prompt is not None else None
                    if request is not None and request.done:
                        try:
                            response = await request
                        except AcpError as exc:
                            self._answered(turn, None, exc)
                        else:
                            self._answered(turn, response.message_id, None)
                self._closed = error
                self._fail_all(error)
                if self._streams is not None:
                    self._streams.end(error)  # a stream opened after this waits for reconnect()

    def _fail_all(self, error: BaseException) -> None:
        turns = self._awaiting + self._active + [s.owner for s in self._segments if s.owner is not None]
        self._awaiting, self._active, self._segments = [], [], []
        self._receiver = None
        for turn in turns:
            turn.fail(error)
        self._update_idle()

    # ------------------------------------------------------------------ chatting

    def chat(self, prompt: str | ContentBlock | Sequence[ContentBlock]) -> ChatTurn:
        """Send ``prompt`` now and return its turn: ``async for`` its events or ``await`` its response."""
        session = self.session
        if self._closed is not None:
            raise self._closed
        if self._disconnected:
            raise SessionClosed(session.session_id)
        blocks: list[ContentBlock]
        if isinstance(prompt, str):
            blocks = [TextContent(text=prompt)]
        elif isinstance(prompt, (list, tuple)):
            blocks = list(prompt)
        else:
            blocks = [prompt]  # type: ignore[list-item]  # one block
        turn = ChatTurn(max_entities=self.max_history_size)

        def tracked(prompt: TrackedPrompt) -> None:
            # Before the protocol may report the user message (v1 does so as the prompt is sent).
            turn.prompt = prompt
            turn.reported_start = prompt.message_id is not None
            self._awaiting.append(turn)

        session.send_tracked(blocks, on_settle=lambda prompt: self._on_answer(turn, prompt), on_tracked=tracked)
        self._update_idle()
        return turn

    async def chat_to_completion(
        self, prompt: str | ContentBlock | Sequence[ContentBlock], *, timeout: float | None = None
    ) -> ChatResponse:
        """``chat`` and wait for the turn's response. With ``timeout``, a turn still running after that many
        seconds is cancelled (``cancel()``: ``session/cancel``) and ``TurnTimeout`` is raised."""
        turn = self.chat(prompt)
        if timeout is None:
            return await turn
        with anyio.move_on_after(timeout):
            return await turn
        with anyio.CancelScope(shield=True):
            await self.cancel()
        raise TurnTimeout(f"the turn did not finish within {timeout} s; its work was cancelled", turn)

    async def send(self, prompt: str | ContentBlock | Sequence[ContentBlock]) -> ChatTurn:
        """Send ``prompt`` and register its turn, without a stream of its own (the low-level ``send`` of the
        conversation designs this layer was built against, listed in docs/conversation.md).

        It is a turn like any other (``pending_turns``, ``turn_start_indices``, ``wait_for_idle()``,
        ``last_response``); read its work through ``receive_steps()`` / ``receive_chunks()``, or from history
        after ``wait_for_idle()``. The returned turn keeps no events: ``await`` it for its ``ChatResponse``
        (iterating it raises ``TurnAlreadyConsumed``)."""
        turn = self.chat(prompt)
        turn.keep_no_events()
        return turn

    def receive_steps(
        self, *, max_buffer: int = DEFAULT_STREAM_BUFFER, overflow: OverflowPolicy = "mark"
    ) -> StepStream:
        """Every fold event from now on, as ``Step``s, across turns and between them (background work, messages the
        agent sends on its own, replays). ``async for`` it; several may be open at once, each buffering up to
        ``max_buffer`` items. A consumer that falls behind gets a ``StreamOverflow`` marker where items were
        dropped (``overflow="mark"``) or ``StreamOverflowError`` after its buffered items (``"error"``). Across an
        automatic reconnect: a ``StreamReconnected`` marker, then what was missed (``replayed``), once. See
        ``acp_session.conversation.streams``."""
        return open_stream(self, StepStream, max_buffer, overflow)

    def receive_chunks(
        self, *, max_buffer: int = DEFAULT_STREAM_BUFFER, overflow: OverflowPolicy = "mark"
    ) -> ChunkStream:
        """What the agent shows the user from now on, across turns and between them: ``ThoughtChunk`` and
        ``TextChunk`` fragments, one ``ToolCallChunk`` per tool call id; replays excluded, except what an automatic
        reconnect's replay brought that the stream had not had (after ``StreamReconnected``, ``replayed``).
        Buffering and ``overflow`` as ``receive_steps()``."""
        return open_stream(self, ChunkStream, max_buffer, overflow)

    async def disconnect(self, *, timeout: float | None = None) -> None:
        """Close the session and stop following it; when this conversation owns its connection
        (``owns_connection``), close the connection too. Idempotent.

        The session is closed with ``session/close`` (the agent cancels its work and reports the end of it, so a
        running turn ends ``cancelled``; held prompts fail with ``RequestCancelled``); a v1 agent without it gets
        ``session/cancel`` if a prompt is pending, and the session is forgotten locally. Turns still unfinished
        then end with ``SessionClosed``; the streams end after their buffered items; ``chat()`` raises
        ``SessionClosed``. A connection already lost is no error. ``timeout`` bounds the close request.
        """
        if self._disconnected:
            return
        self._disconnected = True
        session = self._session
        try:
            if session is not None and not session.connection.rpc.closed:
                with suppress(ConnectionClosed):
                    await session.close(timeout=timeout)
        finally:
            if session is not None:
                self._unbind(SessionClosed(session.session_id))
            if self._streams is not None:
                self._streams.end(None)
            if self.owns_connection:
                assert self._owned is not None
                with anyio.CancelScope(shield=True):
                    await self._owned.rpc.aclose()

    async def cancel(self) -> None:
        """Cancel the session's foreground work; this conversation's unfinished foreground tool calls are
        marked ``cancelled`` right away. Turns still end on the agent's idle (stop reason ``cancelled``)."""
        await self.session.cancel_active_work()
        ids = self._foreground_tool_calls()
        events = self.state.mark_cancelled(ids)
        self._emit(events)
        for event in events:
            self._route(event)

    def _on_options_answer(self, response: SetSessionConfigOptionResponse) -> None:
        """A ``session/set_config_option`` answer is the complete option list: fold it like an update, so
        live state equals a replay of the same wire (``load_transcript``)."""
        self._emit((self.state.apply_set_config_option_response(response),))

    def _emit(self, events: Iterable[StateEvent]) -> None:
        """Fold events that no update carried (local edits, answers) go to the streams too."""
        streams = self._streams
        if streams is not None:
            for event in events:
                streams.event(event)

    # ------------------------------------------------------------------ folding (hot path)

    def _on_note(self, note: UpdateSessionNotification) -> None:
        if note.session_id != self.state.session_id and self.state.session_id is not None:
            self._on_child_note(note)
            return
        event = self._apply(note.update)
        if type(event) is MessageChanged and not event.created:
            receiver = self._receiver  # None during a resume: every turn ended before it started
            if receiver is not None:
                receiver.feed_message(event)
            return
        self._route(event)

    def _on_notes(self, notes: list[UpdateSessionNotification]) -> None:
        """A run of this session's updates, already tracked by the connection (see ``BatchUpdateListener``).

        A stretch of chunks of one known message is collected and folded at once (``SessionState.append_chunks``),
        then reported to the turn and the streams as one run; every other update takes ``_on_note``. The result
        is what ``_on_note`` gives one by one (``tests/conversation/test_batch_delivery.py``).
        """
        state = self.state
        if notes[0].session_id != state.session_id and state.session_id is not None:
            for note in notes:  # a subagent's run (one session's stretch): folded into the child's state
                self._on_child_note(note)
            return
        targets = state.chunk_targets() or {}
        message: Message | None = None  # the message of the current stretch of chunks
        blocks: list[Any] = []
        push: Any = None
        stretch_type: Any = None  # the stretch's update type and message id: its chunks skip the lookups
        stretch_id = ""
        for note in notes:
            update: Any = note.update
            kind = type(update)
            if kind is stretch_type and update.message_id == stretch_id:
                push(update.content)
                continue
            if message is not None:
                self._end_stretch(message, blocks)
            store = targets.get(kind)
            message = None if store is None else store.get(update.message_id)
            if message is None:
                stretch_type = None
                self._on_note(note)
                targets = state.chunk_targets() or {}  # the update may have started a replay window
                continue
            stretch_type, stretch_id = kind, update.message_id
            blocks = [update.content]
            push = blocks.append
        if message is not None:
            self._end_stretch(message, blocks)

    def _on_child_note(self, note: UpdateSessionNotification) -> None:
        """A subagent's own update (Preview; the connection hands a child's updates to its parent's listeners):
        folded into the child's state, then reported to the turn as a ``SubagentEvent``."""
        if self.state.descendant(note.session_id) is None:
            return  # not a child of this conversation's session
        event = self.state.apply_descendant(note.session_id, note.update)
        receiver = self._receiver
        if receiver is None:
            receiver = self._hold_for_answer()
        if receiver is not None:
            receiver.feed(event)

    @property
    def subagents(self) -> Mapping[str, Subagent]:
        """The session's child sessions (Preview), each with its own ``state`` (history, state, usage) and its own
        children: a tree."""
        return self.state.subagents

    async def cancel_subagent(self, session_id: str) -> None:
        """Cancel a subagent's current work (``session/cancel`` with the child's id), only when the parent's
        ``subagent_update`` advertised the child's ``capabilities.cancel`` (else ``CapabilityNotSupported``)."""
        subagent = self.state.descendant(session_id)
        if subagent is None:
            raise KeyError(session_id)
        if not subagent.cancellable:
            raise CapabilityNotSupported("session/cancel", f"capabilities.cancel of subagent {session_id!r}")
        await self.session.connection.session(session_id).cancel_active_work()

    def _end_stretch(self, message: Message, blocks: list[ContentBlock]) -> None:
        """Fold a stretch of chunks of ``message``, then report it to the turn and the streams as one run."""
        self.state.append_chunks(message, blocks)
        receiver = self._receiver  # None during a resume: every turn ended before it started
        if receiver is not None:
            receiver.feed_run(message, blocks)
        streams = self._streams  # None unless a receive_steps() / receive_chunks() stream is open
        if streams is not None:
            streams.chunk_run(message, blocks)
