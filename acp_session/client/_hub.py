"""The connection's hub (internal): what its sessions (``SessionLink``) and the protocol adapter (``ClientSide``)
call, kept off the public ``ClientConnection``.

It owns the negotiated adapter, every session's ``SessionTrack``, the route of incoming updates (track, then the
session's listeners, then the application's handler) and the path of a prompt (``send_prompt``: built by the
adapter, tracked, settled in wire order). The permission and elicitation decisions are ``_decisions.Decisions``.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
from anyio.abc import TaskGroup

from .._counted_log import CountedLog
from ..auth import AuthenticationRequired, LoginMethod, login_methods
from ..client_errors import CapabilityNotSupported
from ..errors import AcpError, AuthRequired, ConnectionClosed
from ..interactions import InteractionRegistry
from ..protocol.base import PromptExchange, ProtocolAdapter
from ..protocol.capabilities import REQUIRED_CAPABILITY, auth_status_change, system_prompt_modes
from ..protocol.negotiate import negotiate
from ..protocol.routes import ClientOffer
from ..rpc import Connection, PendingRequest
from ..schema import unstable as mu
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
    SentRequest,
    SessionTrack,
    TrackedPrompt,
    prepare_blocks,
)
from .active_session import ActiveSession, cancel_quietly

if TYPE_CHECKING:
    from ..mcp.host import BuiltinServers
    from ..providers import FileSystemProvider, TerminalProvider
    from .reconnect import Reconnector
from ._decisions import Decisions
from ._subagents import SubagentTracks
from ._updates import UpdateRouting

if TYPE_CHECKING:
    from ..schema.types import RequestPermissionRequest, RequestPermissionResponse
    from ..telemetry import ConnectionTelemetry
    from ._settings import BuilderSettings
    from .connection import ClientConnection

_log = logging.getLogger("acp_session.client")
T = TypeVar("T")


class ConnectionHub(UpdateRouting):
    """One connection's internals: the ``SessionLink`` of its ``ActiveSession`` handles and the ``ClientSide``
    its protocol adapter hands incoming traffic to."""

    def __init__(self, connection: ClientConnection, rpc: Connection, builder: BuilderSettings, tg: TaskGroup) -> None:
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
        self.subagent_tracks = SubagentTracks(self.session_tracks, self.limits.subagents)
        """The child sessions tracked, within ``Limits.subagents`` (its ``folded`` and ``refused`` counts)."""
        self.subagent_tracks.unfollow = self._unfollow_child
        self.opening = 0  # session/new requests in flight: unknown sessions' early updates are kept
        self._provisional = 0  # tracks made for unknown sessions while a session/new was in flight
        self.unknown_session_updates = 0
        """Updates for sessions this connection never opened or resumed: counted, handed only to
        ``on_session_update``, never tracked (an agent naming endless session ids cannot grow this connection)."""
        self._update_inflight = 0
        self._updates_queued = self._updates_handled = 0
        self._updates_idle = anyio.Event()
        self._updates_idle.set()
        self._update_is_async = inspect.iscoroutinefunction(builder._update)
        self._update_send, receive = anyio.create_memory_object_stream[Any](1024)
        self._file_system = builder._file_system() if builder._file_system is not None else None
        self._terminals = builder._terminals() if builder._terminals is not None else None
        self._offer = builder.offer()
        self.tools_over_mcp = builder._tools_over_mcp
        self.auth_state: mu.AuthStatusUpdateNotification | None = None
        """The agent's latest auth state (Preview), from ``auth/status_update`` and ``auth/status`` answers."""
        self.builtin: BuiltinServers | None = None  # the client's tools as MCP servers (v2; first session)
        self.decisions = Decisions(rpc, builder, self.interactions, self.session_tracks, self.reader_marks)
        self.decide_permission: Callable[[RequestPermissionRequest], Coroutine[Any, Any, RequestPermissionResponse]]
        self.decide_permission = self.decisions.decide_permission
        self.decide_elicitation = self.decisions.decide_elicitation
        self.waiting_interactions = self.decisions.waiting_interactions
        self.reconnector: Reconnector | None = None  # set by ClientBuilder.connect when a reconnect policy is on
        self.session_cwds: dict[str, str] = {}  # each opened or resumed session's cwd: a reconnect resumes it there
        self.telemetry: ConnectionTelemetry | None = None
        """Spans and metrics (``ClientBuilder.instrument``); None, the default, costs nothing."""
        if builder._instrumentation is not None:
            self.telemetry = builder._instrumentation.connection(self)
            self.decide_permission = self.telemetry.permission(self.decide_permission)
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

    @property
    def capability_record(self) -> mu.InitializeResponse:
        """The agent's whole ``initialize`` answer in the unstable schema's types (``ClientConnection``'s)."""
        return self.protocol.capability_record

    def require(self, method: str) -> None:
        """Raise ``CapabilityNotSupported`` (naming the capability) unless the agent offers ``method``."""
        if not self.supports(method):
            raise CapabilityNotSupported(method, REQUIRED_CAPABILITY.get(method, "it"))

    @property
    def system_prompt_modes(self) -> frozenset[str]:
        """The ``systemPrompt`` modes (Preview) the agent accepts on new, resume and fork."""
        return system_prompt_modes(self.capability_record)

    def auth_status_changed(self, note: mu.AuthStatusUpdateNotification) -> Any:
        """An ``auth/status_update`` notification (Preview; routed by the adapter): kept, then the builder's
        ``on_auth_status`` handler."""
        self.auth_state = note
        fn = self.builder._auth_status
        return None if fn is None else fn(note)

    def ext_auth_status_changed(self, params: Any) -> Any:
        """The extension ``_auth/status_update`` (plain JSON) that codex-acp and claude-agent-acp push: read into the
        same typed state (``auth_status_change``), then an application handler registered for that name still
        gets the params as they came."""
        outcome = None
        change = auth_status_change(params)
        if change is not None:
            outcome = self.auth_status_changed(change)
        fn = self.builder._ext_notifications.get("_auth/status_update")
        if fn is not None:
            outcome = fn(params)
        return outcome

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
            with self.initialize_span():
                self._use(await negotiate(self.rpc, self.builder, self.builder.versions, timeout=timeout, agent=agent))
        finally:
            self._initializing = False
            self._ready.set()

    def initialize_span(self) -> AbstractContextManager[None]:
        """The span of an ``initialize`` exchange (the first one, a repeat, or a reconnect's), or nothing."""
        return nullcontext() if self.telemetry is None else self.telemetry.initializing()

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
            with self.initialize_span():
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
        if self.telemetry is None:
            request = protocol.request(method, params, decode)
        else:
            request = self.telemetry.request(method, params, lambda: protocol.request(method, params, decode))
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
            self._update_failed("listener")
            return
        if outcome is not None and inspect.isawaitable(outcome):
            self._tg.start_soon(
                _await, outcome, self.rpc.peer_log
            )  # the application's update queue is full: deliver it later

    def file_written(self, session_id: str, path: str, content: str) -> None:
        """The client wrote a file for the agent (v1 ``fs/write_text_file``): tell the session's listeners."""
        track = self.session_tracks.get(session_id)  # an unknown session has no listeners
        if track is not None:
            track.wrote_file(path, content)

    def run_soon(self, fn: Callable[[Any], Any], arg: Any) -> None:
        """Run ``fn(arg)`` (sync or async) in this connection's task group; failures are logged."""
        self._tg.start_soon(_call_logged, fn, arg, self.rpc.peer_log)

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

    def drop_provisional(self, keep: str) -> None:
        """No session/new is in flight any more: forget the tracks kept for unknown sessions meanwhile.

        Only when some were kept: the scan is over every session's track, and it ran after each session/new, so
        opening S sessions cost S² steps (1 000 sessions: a million, 34 ms; ``benchmarks/scaling.py``)."""
        if not self._provisional:
            return
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
        turn = None if self.telemetry is None else self.telemetry.turn(session.session_id)
        if turn is None:
            exchange = self.prompt_exchange(session.session_id, prompt)
        else:
            with turn.sending():
                exchange = self.prompt_exchange(session.session_id, prompt)
        request = exchange.request
        request.on_expire(lambda _: self.run_soon(cancel_quietly, session))  # a lapsed prompt stops its turn too
        tracked = TrackedPrompt(SentRequest(request, self._prompt_error), prompt, on_settle=on_settle)
        tracked.message_id = exchange.message_id
        track.begin_prompt(tracked, self.rpc.requests_received)
        if on_tracked is not None:
            on_tracked(tracked)
        end = exchange.end

        rpc = self.rpc

        def answered(request: PendingRequest[Any]) -> None:
            try:
                track.settle(tracked, request.outcome(), None)
            except ConnectionClosed as exc:
                reconnector = self.reconnector
                if reconnector is not None and reconnector.will_retry(rpc):
                    reconnector.orphan(track, tracked)  # the lost answer is not the outcome: the resumed session's is
                    return
                track.settle(tracked, None, self._prompt_error(exc))
            except AcpError as exc:
                track.settle(tracked, None, self._prompt_error(exc))
            end()

        request.add_done_callback(answered)
        if turn is not None:
            turn.follow(track, tracked.request)
        exchange.begin()
        return tracked

    def _prompt_error(self, error: AcpError) -> AcpError:
        return self.auth_error(error, "session/prompt")

    # -- reconnecting (client/reconnect.py drives it) ----------------------------------------------------------

    def pause_calls(self) -> None:
        """A reconnect is under way: ``call`` and ``rpc_notify`` wait for it."""
        if self._ready.is_set():
            self._ready = anyio.Event()

    def resume_calls(self) -> None:
        self._ready.set()

    def _unfollow_child(self, session_id: str) -> None:
        """A child no longer tracked: a transport with a stream per session stops reading its stream."""
        unfollow = getattr(self.rpc.transport, "unfollow_session", None)
        if unfollow is not None:
            unfollow(session_id)

    async def start_task(self, fn: Callable[..., Coroutine[Any, Any, Any]]) -> Any:
        """``TaskGroup.start`` in this connection's task group: ``fn`` runs there, its start value returned."""
        return await self._tg.start(fn)

    def adopt(self, rpc: Connection, protocol: ProtocolAdapter) -> None:
        """Continue on a new, initialized peer: its handlers installed as on the first, every session's receipt
        barrier reset (receipt numbers start again on a new peer)."""
        old = self._protocol
        self.rpc = rpc
        self.decisions.rpc = rpc
        self._install(self.builder)
        self._use(protocol)
        hooks, new_hooks = getattr(old, "session_close_hooks", None), getattr(protocol, "session_close_hooks", None)
        if isinstance(hooks, list) and isinstance(new_hooks, list):
            new_hooks.extend(hooks)
        builtin = self.builtin
        if builtin is not None and builtin.mode == "acp":
            from ..codec import decoder
            from ..schema.unstable import MessageMcpRequest

            rpc.on_request("mcp/message", builtin.on_message, decoder(MessageMcpRequest))
        self._other_request_sent = False
        for track in self.session_tracks.values():
            track.cancel_barrier = -1.0

    # -- incoming --------------------------------------------------------------------------------------------

    def _install(self, builder: BuilderSettings) -> None:
        """Handlers that do not depend on the protocol version; the adapter installs the rest at initialize."""
        rpc = self.rpc
        for method, fn in builder._ext_requests.items():
            rpc.on_request(method, fn)
        for method, fn in builder._ext_notifications.items():
            rpc.on_notification(method, fn)
        rpc.set_fallback_request_handler(builder._fallback_request)
        rpc.set_fallback_notification_handler(builder._fallback_notification)


async def _await(outcome: Awaitable[Any], log: CountedLog) -> None:
    try:
        await outcome
    except Exception:
        log.exception("session update handler failures", "session update handler failed", logger=_log)


async def _call_logged(fn: Callable[[Any], Any], arg: Any, log: CountedLog) -> None:
    try:
        outcome = fn(arg)
        if inspect.isawaitable(outcome):
            await outcome
    except Exception:
        log.exception("failures of callbacks run in the background", "%r failed", fn, logger=_log)
