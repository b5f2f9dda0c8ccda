"""The connection's hub (internal): what its sessions (``SessionLink``) and the protocol adapter (``ClientSide``)
call, kept off the public ``ClientConnection``.

It owns the negotiated adapter, every session's ``SessionTrack``, the route of incoming updates (track, then the
session's listeners, then the application's handler) and the path of a prompt (``send_prompt``: built by the
adapter, tracked, settled in wire order). The permission and elicitation decisions are ``_decisions.Decisions``.
"""

from __future__ import annotations

import inspect
import logging
import math
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream

from ..auth import AuthenticationRequired, LoginMethod, login_methods
from ..client_errors import CapabilityNotSupported
from ..errors import AcpError, AuthRequired
from ..interactions import InteractionRegistry
from ..protocol.base import PromptExchange, ProtocolAdapter
from ..protocol.negotiate import negotiate
from ..protocol.routes import ClientOffer
from ..rpc import Connection, PendingRequest
from ..schema.types import (
    AgentCapabilities,
    AuthMethod,
    ContentBlock,
    Implementation,
    InitializeResponse,
    PromptCapabilities,
    SessionCapabilities,
    UpdateSessionNotification,
)
from ..session import (
    TRACKED_UPDATES,
    BatchUpdateListener,
    SentRequest,
    SessionTrack,
    TrackedPrompt,
    prepare_blocks,
)
from .active_session import ActiveSession, cancel_quietly

if TYPE_CHECKING:
    from ..mcp.host import BuiltinServers
    from ..providers import FileSystemProvider, TerminalProvider
from ._decisions import Decisions

if TYPE_CHECKING:
    from .builder import ClientBuilder
    from .connection import ClientConnection

_log = logging.getLogger("acp_session.client")
T = TypeVar("T")


class ConnectionHub:
    """One connection's internals: the ``SessionLink`` of its ``ActiveSession`` handles and the ``ClientSide``
    its protocol adapter hands incoming traffic to."""

    def __init__(self, connection: ClientConnection, rpc: Connection, builder: ClientBuilder, tg: TaskGroup) -> None:
        self.connection = connection
        """The public connection this hub serves (what ``ActiveSession.connection`` returns)."""
        self.rpc = rpc
        self.builder = builder
        self.interactions = InteractionRegistry()
        self._protocol: ProtocolAdapter | None = None
        self._tg = tg
        self._ready = anyio.Event()
        self._initializing = False
        self._other_request_sent = False
        self.session_tracks: dict[str, SessionTrack] = {}
        """Each session's track by id (``SessionLink``)."""
        self.limits = builder._limits
        self.opening = 0  # session/new requests in flight: unknown sessions' early updates are kept
        self._provisional = 0  # tracks made for unknown sessions while a session/new was in flight
        self.unknown_session_updates = 0
        """Updates for sessions this connection never opened or resumed: counted, handed only to
        ``on_session_update``, never tracked (an agent naming endless session ids cannot grow this connection)."""
        self._update_inflight = 0
        self._updates_idle = anyio.Event()
        self._updates_idle.set()
        self._update_is_async = inspect.iscoroutinefunction(builder._update)
        self._update_send, receive = anyio.create_memory_object_stream[Any](1024)
        self._file_system = builder._file_system() if builder._file_system is not None else None
        self._terminals = builder._terminals() if builder._terminals is not None else None
        self._offer = builder.offer()
        self.tools_over_mcp = builder._tools_over_mcp
        self.builtin: BuiltinServers | None = None  # the client's tools as MCP servers (v2; first session)
        self.decisions = Decisions(rpc, builder, self.interactions, self.session_tracks)
        self.decide_permission = self.decisions.decide_permission
        self.decide_elicitation = self.decisions.decide_elicitation
        self.waiting_interactions = self.decisions.waiting_interactions
        if builder._update is not None:
            tg.start_soon(self._update_consumer, receive)
        self._install(builder)

    # -- what the agent said -----------------------------------------------------------------------------

    @property
    def protocol(self) -> ProtocolAdapter:
        """The negotiated protocol version's adapter (``protocol.version``)."""
        if self._protocol is None:
            raise AcpError("the connection is not initialized")
        return self._protocol

    @property
    def initialize_response(self) -> InitializeResponse | None:
        """The agent's ``initialize`` answer in the model's (v2) shape, whatever version was agreed."""
        return None if self._protocol is None else self._protocol.initialize_response

    def _init(self) -> InitializeResponse:
        return self.protocol.initialize_response

    @property
    def agent_info(self) -> Implementation:
        return self._init().info

    @property
    def agent_capabilities(self) -> AgentCapabilities:
        caps = self._init().capabilities
        return caps if isinstance(caps, AgentCapabilities) else AgentCapabilities()

    @property
    def auth_methods(self) -> list[AuthMethod]:
        methods = self._init().auth_methods
        return list(methods) if isinstance(methods, list) else []

    def supports(self, method: str) -> bool:
        """Whether the agent offers ``method`` (model method names, e.g. ``session/list``) in the agreed version."""
        return self.protocol.supports(method)

    # -- what the agent may call (protocol version 1) ---------------------------------------------------------

    @property
    def file_system(self) -> FileSystemProvider | None:
        """The provider answering v1 ``fs/*`` calls, if the builder set one."""
        return self._file_system

    @property
    def terminals(self) -> TerminalProvider | None:
        """The provider answering v1 ``terminal/*`` calls, if the builder set one."""
        return self._terminals

    @property
    def offer(self) -> ClientOffer:
        """What this connection offers the agent (``ClientBuilder.offer()`` when it was made): which of the
        protocol adapter's incoming routes are registered."""
        return self._offer

    @property
    def elicitation_complete(self) -> Callable[[Any], Any] | None:
        return self.builder._elicitation_complete

    # -- initialize ----------------------------------------------------------------------------------------

    async def first_initialize(self, timeout: float | None = None, agent: object = None) -> None:
        self._initializing = True
        try:
            self._use(await negotiate(self.rpc, self.builder, self.builder.versions, timeout=timeout, agent=agent))
        finally:
            self._initializing = False
            self._ready.set()

    def _use(self, protocol: ProtocolAdapter) -> None:
        self._protocol = protocol
        protocol.install(self)

    async def initialize(self, *, timeout: float | None = None) -> InitializeResponse:
        """Repeat ``initialize`` (allowed only before any other request). A failed repeat keeps the previous one.
        ``timeout`` ends the wait with ``InitializeTimeout``."""
        if self._initializing:
            raise AcpError("initialize is already in progress")
        if self._other_request_sent:
            raise AcpError("initialize can only be repeated before any other request")
        self._initializing = True
        self._ready = anyio.Event()
        try:
            protocol = await negotiate(
                self.rpc, self.builder, self.builder.versions, timeout=timeout, agent=self.rpc.transport
            )
            self._use(protocol)
            return protocol.initialize_response
        finally:
            self._initializing = False
            self._ready.set()

    # -- raw access ----------------------------------------------------------------------------------------

    def rpc_request(
        self, method: str, params: Any, decode: Callable[[bytes], T], timeout: float | None = None
    ) -> PendingRequest[T]:
        """Send ``method``; with a ``timeout`` the request gives up that many seconds from now (while awaited:
        ``$/cancel_request`` is sent and ``RequestTimeout`` raised)."""
        protocol = self._protocol
        if self._initializing or protocol is None:
            raise AcpError(f"{method}: initialize has not completed")
        self._other_request_sent = True
        request = protocol.request(method, params, decode)
        if timeout is not None:
            request.set_timeout(timeout)
        return request

    async def call(self, method: str, params: Any, decode: Callable[[bytes], T], timeout: float | None = None) -> T:
        await self._ready.wait()  # a repeated initialize in flight: wait for it
        return await self.rpc_request(method, params, decode, timeout)

    async def rpc_notify(self, method: str, params: Any) -> None:
        await self._ready.wait()
        await self.protocol.notify(method, params)

    def auth_error(self, error: AcpError, method: str) -> AcpError:
        """A refusal for lack of login (-32000) as ``AuthenticationRequired``, with the agent's login methods."""
        if isinstance(error, AuthRequired):
            return AuthenticationRequired.of(error, self.login_methods, method)
        return error

    async def call_auth(
        self, method: str, params: Any, decode: Callable[[bytes], T], timeout: float | None = None
    ) -> T:
        """``_call`` for the calls an agent refuses until the user logs in (session/new, resume, load)."""
        try:
            return await self.call(method, params, decode, timeout)
        except AuthRequired as exc:
            raise self.auth_error(exc, method) from None

    def prompt_exchange(self, session_id: str, blocks: Sequence[ContentBlock]) -> PromptExchange:
        """Send ``session/prompt`` for ``session_id`` through the protocol adapter (``SessionLink``)."""
        protocol = self._protocol
        if self._initializing or protocol is None:
            raise AcpError("session/prompt: initialize has not completed")
        self._other_request_sent = True
        return protocol.prompt(session_id, blocks)

    def deliver_synthetic(self, note: UpdateSessionNotification) -> None:
        """An update the protocol adapter made up (v1's user message and turn states), in wire order."""
        try:
            outcome = self.receive_update(note)
        except Exception:
            _log.exception("session update listener failed")
            return
        if outcome is not None and inspect.isawaitable(outcome):
            self._tg.start_soon(_await, outcome)  # the application's update queue is full: deliver it later

    def file_written(self, session_id: str, path: str, content: str) -> None:
        """The client wrote a file for the agent (v1 ``fs/write_text_file``): tell the session's listeners."""
        track = self.session_tracks.get(session_id)  # an unknown session has no listeners
        if track is not None:
            track.wrote_file(path, content)

    def run_soon(self, fn: Callable[[Any], Any], arg: Any) -> None:
        """Run ``fn(arg)`` (sync or async) in this connection's task group; failures are logged."""
        self._tg.start_soon(_call_logged, fn, arg)

    def start_soon(self, fn: Callable[..., Coroutine[Any, Any, Any]], *args: Any) -> None:
        """Start the task ``fn(*args)`` in this connection's task group, which it lives and fails with (a
        ``Conversation`` watches its connection so); ``run_soon`` is the one whose failures are only logged."""
        self._tg.start_soon(fn, *args)

    @property
    def login_methods(self) -> list[LoginMethod]:
        """The agent's auth methods as ``LoginMethod`` values: every shape of both versions (``agent``,
        ``terminal``, codex-acp's ``env_var``, ``_meta`` terminal commands), unknown ones kept."""
        return login_methods(self.auth_methods)

    def session_caps(self, method: str) -> SessionCapabilities:
        caps = self.agent_capabilities.session
        if not isinstance(caps, SessionCapabilities):
            raise CapabilityNotSupported(method, "session")
        return caps

    def prompt_capabilities(self) -> PromptCapabilities | None:
        """The agent's ``session.prompt`` capabilities, or None if it advertised none."""
        caps = self.agent_capabilities.session
        prompt = caps.prompt if isinstance(caps, SessionCapabilities) else None
        return prompt if isinstance(prompt, PromptCapabilities) else None

    def session_track(self, session_id: str) -> SessionTrack:
        """``session_id``'s track, made if there is none yet (``SessionLink``)."""
        track = self.session_tracks.get(session_id)
        if track is None:
            track = self.session_tracks[session_id] = SessionTrack(session_id, max_cancellable=self.limits.cancellable)
        return track

    def _arrival_track(self, session_id: str) -> SessionTrack | None:
        """The track for an update of a session this connection has no track for: while a ``session/new`` is in
        flight it may be the session being created, so a bounded number of such sessions keep their early
        updates; otherwise None (the update is counted and only the application's handler sees it)."""
        if not self.opening or self._provisional >= self.limits.early_sessions:
            self.unknown_session_updates += 1
            return None
        self._provisional += 1
        track = self.session_tracks[session_id] = SessionTrack(session_id, max_cancellable=self.limits.cancellable)
        track.early = []  # perhaps the session a pending session/new is creating
        return track

    def drop_provisional(self, keep: str) -> None:
        """No session/new is in flight any more: forget the tracks kept for unknown sessions meanwhile."""
        for session_id in [s for s, t in self.session_tracks.items() if t.early is not None and not t.listeners]:
            if session_id != keep:
                del self.session_tracks[session_id]
        self._provisional = 0

    def send_prompt(
        self,
        session: ActiveSession,
        track: SessionTrack,
        blocks: Sequence[ContentBlock],
        on_settle: Callable[[TrackedPrompt], None] | None,
        on_tracked: Callable[[TrackedPrompt], None] | None,
    ) -> TrackedPrompt:
        """A prompt down once (``SessionLink``): checked against the agent's prompt capabilities, built by the
        adapter, tracked (``on_tracked`` runs before anything about it can be reported: v1 reports the user
        message itself right after), then settled on ``track`` the moment its answer is read, in wire order with
        the updates around it, before the adapter ends the exchange (v1: the idle state with the stop reason)."""
        prompt = prepare_blocks(blocks, self.prompt_capabilities())
        exchange = self.prompt_exchange(session.session_id, prompt)
        request = exchange.request
        request.on_expire(lambda _: self.run_soon(cancel_quietly, session))  # a lapsed prompt stops its turn too
        tracked = TrackedPrompt(SentRequest(request, self._prompt_error), prompt, on_settle=on_settle)
        tracked.message_id = exchange.message_id
        track.begin_prompt(tracked, self.rpc.requests_received)
        if on_tracked is not None:
            on_tracked(tracked)
        end = exchange.end

        def answered(request: PendingRequest[Any]) -> None:
            try:
                track.settle(tracked, request.outcome(), None)
            except AcpError as exc:
                track.settle(tracked, None, self._prompt_error(exc))
            end()

        request.add_done_callback(answered)
        exchange.begin()
        return tracked

    def _prompt_error(self, error: AcpError) -> AcpError:
        return self.auth_error(error, "session/prompt")

    # -- incoming --------------------------------------------------------------------------------------------

    def _install(self, builder: ClientBuilder) -> None:
        """Handlers that do not depend on the protocol version; the adapter installs the rest at initialize."""
        rpc = self.rpc
        for method, fn in builder._ext_requests.items():
            rpc.on_request(method, fn)
        for method, fn in builder._ext_notifications.items():
            rpc.on_notification(method, fn)
        rpc.set_fallback_request_handler(builder._fallback_request)
        rpc.set_fallback_notification_handler(builder._fallback_notification)

    def receive_update(self, note: UpdateSessionNotification) -> Any:
        """Runs inline in the reader (sync): track first, then the application's handler, in arrival order.

        Async handlers go through this connection's own bounded queue, counted at arrival, so ``resume_session``
        can wait for every replayed update that arrived before its response.
        """
        track = self.session_tracks.get(note.session_id) or self._arrival_track(note.session_id)
        if track is None:
            return self._to_application(note)  # a session this connection never opened or resumed
        if type(note.update) in TRACKED_UPDATES:  # a set probe instead of four isinstance calls per chunk
            self._apply_tracked(track, note)
        listeners = track.listeners
        if listeners:
            try:
                for listener in listeners:
                    listener(note)
            except Exception:
                _log.exception("session update listener failed")
        elif track.early is not None and len(track.early) < self.limits.early_updates:
            track.early.append(note)
        return self._to_application(note)

    def _to_application(self, note: UpdateSessionNotification) -> Any:
        """Hand an update to the builder's ``on_session_update`` handler (every session's, in order)."""
        fn = self.builder._update
        if fn is None:
            return None
        if self._update_is_async:
            return self._queue_update(note)
        outcome = fn(note)
        if outcome is not None and inspect.isawaitable(outcome):
            return self._queue_update(outcome)
        return None

    def receive_updates(self, notes: list[UpdateSessionNotification]) -> Any:
        """``receive_update`` for a run of updates that one read brought in: same outcome, same order.

        Without an application handler, each stretch of one session's updates is tracked, then handed on in
        one call (``_hand_run``). With one, updates go note by note (a sync handler with no listeners is
        called in a tight loop). Returns None, or an awaitable that delivers the rest once the application's
        update queue has room.
        """
        fn = self.builder._update
        if fn is None:
            self._track_runs(notes)
            return None
        track = self.session_tracks.get(notes[0].session_id)
        if track is not None and track.early is None and not track.listeners and not self._update_is_async:
            steps = self._update_steps(notes, (track.session_id, fn))
        else:
            steps = self._update_steps(notes)
        for waiting in steps:
            return self._finish_updates(chain((waiting,), steps))
        return None

    def _track_runs(self, notes: list[UpdateSessionNotification]) -> None:
        """Track each update, then hand each stretch of one session's updates to its listeners (forward only)."""
        tracks = self.session_tracks
        tracked = TRACKED_UPDATES
        current = notes[0].session_id
        track = tracks.get(current) or self._arrival_track(current)
        start = 0
        for index, note in enumerate(notes):
            session_id = note.session_id
            if session_id != current:
                if track is not None and start < index:
                    self._hand_run(track, notes[start:index])
                start, current = index, session_id
                track = tracks.get(session_id) or self._arrival_track(session_id)
                if track is None:
                    continue  # counted by _arrival_track
            if track is None:
                if index > start:
                    self.unknown_session_updates += 1
            elif type(note.update) in tracked:  # a set probe instead of four isinstance calls per chunk
                self._apply_tracked(track, note)
        if track is not None:
            self._hand_run(track, notes if start == 0 else notes[start:])

    def _apply_tracked(self, track: SessionTrack, note: UpdateSessionNotification) -> None:
        """An update of a tracked kind changes the session's track; an idle after a cancel closes the barrier."""
        track.apply(note)
        if track.cancel_barrier == math.inf and track.state == "idle":
            track.cancel_barrier = self.rpc.requests_received  # the cancelled work ended here

    def _hand_run(self, track: SessionTrack, run: list[UpdateSessionNotification]) -> None:
        """A tracked stretch of one session's updates to its listeners: in one call to a lone
        ``BatchUpdateListener``, else note by note; kept for later while a ``session/new`` may still claim it."""
        listeners = track.listeners
        if len(listeners) == 1 and type(listeners[0]) is BatchUpdateListener:
            try:
                listeners[0].many(run)
            except Exception:
                _log.exception("session update listener failed")
            return
        if listeners:
            for note in run:
                try:
                    for listener in listeners:
                        listener(note)
                except Exception:
                    _log.exception("session update listener failed")
            return
        early = track.early
        if early is not None:
            early.extend(run[: max(0, self.limits.early_updates - len(early))])

    async def _finish_updates(self, steps: Iterator[Awaitable[Any]]) -> None:
        for waiting in steps:
            try:
                await waiting
            except Exception:
                _log.exception("session update handler failed")

    def _update_steps(
        self, notes: list[UpdateSessionNotification], direct: tuple[str, Callable[[Any], Any]] | None = None
    ) -> Iterator[Awaitable[Any]]:
        """``receive_update`` note by note; yields each awaitable to finish before the next note.

        ``direct`` is ``(session_id, handler)`` for a session without listeners and a sync application
        handler: its untracked updates go straight to the handler.
        """
        for note in notes:
            try:
                if direct is None or note.session_id != direct[0] or type(note.update) in TRACKED_UPDATES:
                    outcome = self.receive_update(note)
                else:
                    outcome = direct[1](note)
                    if outcome is not None and inspect.isawaitable(outcome):
                        outcome = self._queue_update(outcome)
            except Exception:
                _log.exception("session update handler failed")
                continue
            if outcome is not None:
                yield outcome

    def _queue_update(self, item: Any) -> Any:
        self._update_inflight += 1
        if self._updates_idle.is_set():
            self._updates_idle = anyio.Event()
        try:
            self._update_send.send_nowait(item)
        except anyio.WouldBlock:
            return self._update_send.send(item)  # full: the rpc layer awaits this in order (backpressure)
        return None

    async def _update_consumer(self, receive: MemoryObjectReceiveStream[Any]) -> None:
        fn = self.builder._update
        assert fn is not None
        async with receive:
            async for item in receive:
                try:
                    await (item if inspect.isawaitable(item) else fn(item))
                except Exception:
                    _log.exception("session/update handler failed")
                finally:
                    self._update_inflight -= 1
                    if self._update_inflight == 0:
                        self._updates_idle.set()

    async def updates_drained(self) -> None:
        while self._update_inflight:
            await self._updates_idle.wait()


async def _await(outcome: Awaitable[Any]) -> None:
    try:
        await outcome
    except Exception:
        _log.exception("session update handler failed")


async def _call_logged(fn: Callable[[Any], Any], arg: Any) -> None:
    try:
        outcome = fn(arg)
        if inspect.isawaitable(outcome):
            await outcome
    except Exception:
        _log.exception("%r failed", fn)
