"""``ClientBuilder`` (identity, capabilities, typed handlers) and ``ClientConnection`` (an initialized client).

``builder.connect(transport)`` sends ``initialize`` and yields a ``ClientConnection``; sessions are opened on it.
Handlers receive generated types and may be plain functions or coroutine functions. Capabilities that depend
on a handler (elicitation modes) are derived from what was registered, so they cannot disagree.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import math
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from itertools import chain
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import anyio
import msgspec
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream

from ._version import __version__
from .auth import AuthenticationRequired, LoginMethod, login_methods
from .client_errors import CapabilityNotSupported
from .codec import convert, decoder, to_builtins
from .errors import AcpError, AuthRequired, InitializeTimeout, ResourceNotFound
from .interactions import Interaction, InteractionRegistry, call_handler
from .protocol.base import PromptExchange, ProtocolAdapter
from .protocol.negotiate import DEFAULT_INITIALIZE_TIMEOUT, SUPPORTED_VERSIONS, negotiate
from .protocol.routes import ClientOffer, advertised
from .protocol.v1.adapter import V1Protocol
from .rpc import Connection, PendingRequest, json_decode
from .schema.types import (
    AGENT_METHODS,
    AgentCapabilities,
    AuthMethod,
    AuthMethodAgent,
    CancelledPermissionOutcome,
    ClientAuthCapabilities,
    ClientCapabilities,
    CommandPermissionSubject,
    CompleteElicitationNotification,
    ContentBlock,
    CreateElicitationRequest,
    CreateElicitationResponse,
    DeleteSessionRequest,
    DeleteSessionResponse,
    ElicitationCancelAction,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    ElicitationFormMode,
    ElicitationUrlCapabilities,
    ElicitationUrlMode,
    Implementation,
    InitializeResponse,
    ListSessionsRequest,
    ListSessionsResponse,
    LoginAuthRequest,
    LoginAuthResponse,
    LogoutAuthRequest,
    LogoutAuthResponse,
    McpServer,
    McpServerHttp,
    McpServerStdio,
    NewSessionRequest,
    NewSessionResponse,
    PromptCapabilities,
    ReplayFrom,
    ReplayFromStart,
    RequestPermissionRequest,
    RequestPermissionResponse,
    ResumeSessionRequest,
    ResumeSessionResponse,
    SelectedPermissionOutcome,
    SessionCapabilities,
    SessionInfo,
    TerminalAuthCapabilities,
    ToolCallPermissionSubject,
    UpdateSessionNotification,
)
from .schema.v1 import types as v1
from .session import (
    DEFAULT_LIMITS,
    TRACKED_UPDATES,
    ActiveSession,
    BatchUpdateListener,
    SentRequest,
    SessionTrack,
    TrackedPrompt,
    UpdateListener,
)
from .transport import AgentProcess, Transport, stdio_agent
from .transport.environment import EnvPolicy, agent_environment

if TYPE_CHECKING:
    from .conversation.conversation import Conversation
    from .providers import FileSystemProvider, TerminalProvider
    from .session import SessionLink

__all__ = ["PROTOCOL_VERSION", "ClientBuilder", "ClientConnection", "ElicitationMode"]

PROTOCOL_VERSION = 2
"""The newest protocol version this library speaks (and offers first); version 1 is spoken too."""
_log = logging.getLogger("acp_session.client")
T = TypeVar("T")
ElicitationMode = Literal["form", "url"]
Handler = Callable[[Any], Any]
Fallback = Callable[[str, bytes], Any]


def _ext_name(method: str) -> str:
    if not method.startswith("_"):
        raise ValueError(f"extension methods must start with '_' (got {method!r})")
    return method


def _absolute(path: str | os.PathLike[str], what: str) -> str:
    text = os.fspath(path)
    if not os.path.isabs(text):
        raise ValueError(f"{what} must be an absolute path (got {text!r})")
    return text


class ClientBuilder:
    """Collects the client's identity, capabilities and handlers; ``connect()`` applies them to a connection."""

    def __init__(self, name: str = "acp-session", version: str = __version__, *, title: str | None = None) -> None:
        self.info = Implementation(name=name, version=version, title=msgspec.UNSET if title is None else title)
        self.terminal_auth = False
        self.meta: dict[str, Any] | None = None
        self._update: Handler | None = None
        self._permission: Handler | None = None
        self._elicitation: Handler | None = None
        self._elicitation_modes: frozenset[str] = frozenset()
        self._elicitation_complete: Handler | None = None
        self._ext_requests: dict[str, Handler] = {}
        self._ext_notifications: dict[str, Handler] = {}
        self._fallback_request: Fallback | None = None
        self._fallback_notification: Fallback | None = None
        self._transcript: str | os.PathLike[str] | None = None
        self._versions: tuple[int, ...] = SUPPORTED_VERSIONS
        self._file_system: Callable[[], FileSystemProvider] | None = None
        self._fs_access = (False, False)  # (read, write) advertised with a file-system provider
        self._terminals: Callable[[], TerminalProvider] | None = None
        self._own_terminals = False  # built-in terminals: started and stopped with each connection
        self._limits = DEFAULT_LIMITS

    def limits(
        self,
        *,
        early_sessions: int | None = None,
        early_updates: int | None = None,
        cancellable: int | None = None,
    ) -> ClientBuilder:
        """Change what a connection keeps at most per session (``Limits``; the defaults are documented there
        and in docs/robustness.md). Omitted ones keep their value."""
        changes = {"early_sessions": early_sessions, "early_updates": early_updates, "cancellable": cancellable}
        self._limits = dataclasses.replace(self._limits, **{k: v for k, v in changes.items() if v is not None})
        return self

    # -- protocol versions ---------------------------------------------------------------------------------

    def protocol_versions(self, *versions: int) -> ClientBuilder:
        """Speak only these protocol versions (default: 2 and 1). The newest is offered first; an agent
        that answers another allowed version continues in it, any other answer is a ``ProtocolVersionMismatch``."""
        unknown = [v for v in versions if v not in SUPPORTED_VERSIONS]
        if not versions or unknown:
            raise ValueError(f"protocol versions must be some of {list(SUPPORTED_VERSIONS)} (got {list(versions)})")
        self._versions = tuple(sorted(set(versions), reverse=True))
        return self

    @property
    def versions(self) -> tuple[int, ...]:
        return self._versions

    # -- identity and capabilities ---------------------------------------------------------------------------

    def with_terminal_auth(self, enabled: bool = True) -> ClientBuilder:
        """Advertise that this client can run terminal authentication methods itself."""
        self.terminal_auth = enabled
        return self

    def record_transcript(self, path: str | os.PathLike[str] | None) -> ClientBuilder:
        """Append every wire line, both directions and timestamped, to ``path`` (JSON lines; see
        ``acp_session.transcript``). For bug reports and test fixtures; None turns it off."""
        self._transcript = path
        return self

    def with_meta(self, meta: dict[str, Any] | None) -> ClientBuilder:
        self.meta = meta
        return self

    def capabilities(self) -> ClientCapabilities:
        """What ``initialize`` will advertise; elicitation modes come from ``on_elicitation``."""
        elicitation: ElicitationCapabilities | msgspec.UnsetType = msgspec.UNSET
        if self._elicitation is not None and self._elicitation_modes:
            elicitation = ElicitationCapabilities(
                form=ElicitationFormCapabilities() if "form" in self._elicitation_modes else msgspec.UNSET,
                url=ElicitationUrlCapabilities() if "url" in self._elicitation_modes else msgspec.UNSET,
            )
        auth = ClientAuthCapabilities(terminal=TerminalAuthCapabilities()) if self.terminal_auth else msgspec.UNSET
        meta = msgspec.UNSET if self.meta is None else self.meta
        return ClientCapabilities(auth=auth, elicitation=elicitation, meta=meta)

    def offer(self) -> ClientOffer:
        """What this client offers the agent: the conditions of the protocol adapters' incoming routes
        (``acp_session.protocol.routes``), from which the v1 ``fs`` / ``terminal`` capabilities are derived."""
        files = self._file_system is not None
        return ClientOffer(
            file_system=files,
            read_files=files and self._fs_access[0],
            write_files=files and self._fs_access[1],
            terminals=self._terminals is not None,
            elicitation_complete=self._elicitation_complete is not None,
        )

    def v1_initialize_request(self) -> v1.InitializeRequest:
        """What ``initialize`` advertises to a version 1 agent: the same identity and capabilities, plus
        ``fs`` and ``terminal`` exactly when a provider for them is set (``with_file_system`` / ``with_terminals``
        or ``on_file_system`` / ``on_terminals``): each flag is true exactly when the v1 adapter registers its
        methods (both come from ``V1Protocol.routes``)."""
        plain: dict[str, Any] = to_builtins(self.capabilities())
        offer = self.offer()
        if plain.get("auth", {}).get("terminal") is not None:
            plain["auth"] = {"terminal": True}
        plain.update(advertised(V1Protocol.routes, offer))
        if not offer.file_system:
            plain["fs"] = {}  # no provider: an empty object, as v1 clients commonly send
        return v1.InitializeRequest(
            protocol_version=1,
            client_capabilities=convert(plain, v1.ClientCapabilities),
            client_info=convert(to_builtins(self.info), v1.Implementation),
        )

    # -- the agent's calls into the client (protocol version 1) ----------------------------------------------

    def with_file_system(
        self,
        roots: Sequence[str | os.PathLike[str]] = (),
        *,
        read: bool = True,
        write: bool = True,
        max_read_bytes: int = 16 * 1024 * 1024,
    ) -> ClientBuilder:
        """Answer v1 ``fs/read_text_file`` / ``fs/write_text_file`` from the local disk, confined to each
        session's cwd and additional directories plus ``roots`` (see ``acp_session.providers.LocalFileSystem``).
        Off by default: without it (or ``on_file_system``) the file-system capability is not advertised."""
        from .providers import LocalFileSystem

        paths = list(roots)
        self._file_system = lambda: LocalFileSystem(paths, read=read, write=write, max_read_bytes=max_read_bytes)
        self._fs_access = (read, write)
        return self

    def on_file_system(self, provider: FileSystemProvider, *, read: bool = True, write: bool = True) -> ClientBuilder:
        """Answer v1 ``fs/*`` calls with your own provider; ``read`` / ``write`` say what is advertised."""
        self._file_system = lambda: provider
        self._fs_access = (read, write)
        return self

    def with_terminals(
        self,
        roots: Sequence[str | os.PathLike[str]] = (),
        *,
        env: Mapping[str, str] | None = None,
        output_byte_limit: int = 1024 * 1024,
        max_terminals: int = 32,
        kill_grace: float = 2.0,
        reap_descendants: bool = True,
    ) -> ClientBuilder:
        """Run v1 ``terminal/*`` commands as local processes (``acp_session.providers.LocalTerminals``): in the
        session's cwd or ``roots``, with an explicit environment, bounded output; all ended, with everything
        they started (``reap_descendants``: however it detached, on Linux), when the connection ends.
        Off by default: without it (or ``on_terminals``) the terminal capability is not advertised."""
        from .providers import LocalTerminals

        paths = list(roots)
        self._terminals = lambda: LocalTerminals(
            paths,
            env=env,
            output_byte_limit=output_byte_limit,
            max_terminals=max_terminals,
            kill_grace=kill_grace,
            reap_descendants=reap_descendants,
        )
        self._own_terminals = True
        return self

    def on_terminals(self, provider: TerminalProvider) -> ClientBuilder:
        """Answer v1 ``terminal/*`` calls with your own provider (you start and stop it)."""
        self._terminals = lambda: provider
        self._own_terminals = False
        return self

    # -- handlers --------------------------------------------------------------------------------------------

    def on_session_update(self, fn: Callable[[UpdateSessionNotification], Any]) -> ClientBuilder:
        """Every ``session/update``, in arrival order, including sessions this process has no handle for."""
        self._update = fn
        return self

    def on_request_permission(self, fn: Callable[[RequestPermissionRequest], Any]) -> ClientBuilder:
        """Answer permission requests: return a ``RequestPermissionResponse``, an outcome or an option id.

        Without one, every request is answered with the cancelled outcome (never an approval).
        """
        self._permission = fn
        return self

    def on_elicitation(
        self, fn: Callable[[CreateElicitationRequest], Any], modes: Iterable[ElicitationMode] = ("form",)
    ) -> ClientBuilder:
        """Answer ``elicitation/create`` for ``modes``; those modes are advertised, nothing else is."""
        self._elicitation = fn
        self._elicitation_modes = frozenset(modes)
        return self

    def on_elicitation_complete(self, fn: Callable[[CompleteElicitationNotification], Any]) -> ClientBuilder:
        self._elicitation_complete = fn
        return self

    def on_ext_request(self, method: str, fn: Callable[[Any], Any]) -> ClientBuilder:
        """Answer an extension request (``_``-prefixed); ``fn`` gets the params as plain JSON values."""
        self._ext_requests[_ext_name(method)] = fn
        return self

    def on_ext_notification(self, method: str, fn: Callable[[Any], Any]) -> ClientBuilder:
        self._ext_notifications[_ext_name(method)] = fn
        return self

    def on_fallback(self, request: Fallback | None = None, notification: Fallback | None = None) -> ClientBuilder:
        """``(method, raw params JSON)`` handlers for anything without its own handler (default: -32601 / drop)."""
        self._fallback_request = request
        self._fallback_notification = notification
        return self

    # -- connecting ------------------------------------------------------------------------------------------

    @asynccontextmanager
    async def connect(
        self,
        transport: Transport,
        *,
        initialize_timeout: float | None = DEFAULT_INITIALIZE_TIMEOUT,
        **options: Any,
    ) -> AsyncIterator[ClientConnection]:
        """Initialize over ``transport``; leaving the block closes the connection and the transport.

        ``initialize_timeout`` (seconds, default 30; None for none) bounds the ``initialize`` exchange: an agent
        that does not answer in time ends in ``InitializeTimeout`` (naming the agent, with its last stderr
        lines). ``options`` go to ``acp_session.rpc.Connection`` (queue sizes, frame limit, ...).
        """
        # Entered by hand, not with ``async with``: a task group wraps the body's exception in an
        # ExceptionGroup, and callers should see ``ProtocolVersionMismatch`` or their own error as raised.
        source = transport  # the agent's own transport (command line, stderr), before any wrapping
        if isinstance(getattr(source, "name", None), str):
            options.setdefault("peer_name", source.name)  # type: ignore[attr-defined]
        if self._transcript is not None:
            from .transcript import RecordingTransport

            transport = RecordingTransport(transport, self._transcript)
        rpc = Connection(transport, **options)
        await rpc.__aenter__()
        try:
            tg = anyio.create_task_group()
            await tg.__aenter__()
            try:
                client = ClientConnection(rpc, self, tg)
                terminals = client.terminals if self._own_terminals else None
                if terminals is not None:
                    await terminals.__aenter__()  # type: ignore[attr-defined]
                    tg.start_soon(_end_terminals_on_close, rpc, terminals)
                try:
                    try:
                        await client._first_initialize(initialize_timeout, source)
                    except InitializeTimeout:
                        if isinstance(source, AgentProcess):  # it never said hello: no need to wait long for it
                            source.grace_period = min(source.grace_period, 0.2)
                        raise
                    yield client
                finally:
                    if terminals is not None:  # it shields its own shutdown; a scope here would not nest
                        await terminals.__aexit__(None, None, None)  # type: ignore[attr-defined]
            finally:
                tg.cancel_scope.cancel()
                await tg.__aexit__(None, None, None)
        finally:
            await rpc.__aexit__(None, None, None)

    @asynccontextmanager
    async def spawn(
        self,
        argv: Sequence[str],
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        *,
        env_policy: EnvPolicy = "inherit",
        pass_env: Sequence[str] = (),
        own_process_group: bool = True,
        reap_descendants: bool = True,
        grace_period: float = 2.0,
        terminate_timeout: float = 2.0,
        initialize_timeout: float | None = DEFAULT_INITIALIZE_TIMEOUT,
        **options: Any,
    ) -> AsyncIterator[ClientConnection]:
        """Start an agent subprocess and connect to it; leaving the block shuts the process down.

        Everything the agent starts is ours (``own_process_group``, the default): leaving the block closes its
        stdin, waits ``grace_period`` for the agent and every process it started to exit, then sends SIGTERM to
        all of them, waits ``terminate_timeout``, then SIGKILL, so nothing the agent started outlives the block.
        On Linux (``reap_descendants``, the default) the agent runs under the reaper, which holds its
        descendants however they detach (``setsid``, daemons) and ends them even if this process dies;
        elsewhere it runs in its own session and process group, and a process that leaves the group is out of
        reach. A terminal's Ctrl-C reaches only this process (interactive front ends turn it into
        ``session/cancel``). ``own_process_group=False``
        keeps the agent in this process's group and signals only the agent itself (its children are left
        alone). ``initialize_timeout`` and ``options``: see ``connect``.

        The agent's environment: ``env`` when given (exactly that); else ``env_policy``: ``"inherit"`` (the
        default: all of this process's environment, which real agents need for their keys and settings) or
        ``"minimal"`` (PATH, HOME, user, locale, terminal, temp dir, and the variables named in ``pass_env``;
        see ``acp_session.transport.environment``)."""
        process = stdio_agent(
            argv,
            cwd,
            env if env is not None else agent_environment(env_policy, pass_env),
            own_process_group=own_process_group,
            reap_descendants=reap_descendants,
            grace_period=grace_period,
            terminate_timeout=terminate_timeout,
        )
        transport = await process.__aenter__()  # by hand, for the same reason as in connect()
        try:
            async with self.connect(transport, initialize_timeout=initialize_timeout, **options) as client:
                yield client
        finally:
            await process.__aexit__(None, None, None)


async def _end_terminals_on_close(rpc: Connection, terminals: Any) -> None:
    """When the agent's connection ends (the agent died or hung up), end its terminals at once: nobody is left
    to read, wait for or release them, and they must not run on until the client's block is left."""
    await rpc.wait_closed()
    try:
        await terminals.end_all()
    except Exception:  # the block's own shutdown tries again; never fail the connection for it
        _log.exception("ending the terminals of a closed connection failed")


_INITIALIZE = decoder(InitializeResponse)
_NEW = decoder(NewSessionResponse)
_RESUME = decoder(ResumeSessionResponse)
_LIST = decoder(ListSessionsResponse)
_DELETE = decoder(DeleteSessionResponse)
_CANCELLED_PERMISSION = RequestPermissionResponse(outcome=CancelledPermissionOutcome())


class ClientConnection:
    """An initialized connection to an agent: session lifecycle, auth and extension calls.

    Whatever protocol version was agreed, everything here speaks the model (the v2 types); the
    ``protocol`` adapter maps it to the agent's wire.

    It is the ``SessionLink`` of its ``ActiveSession`` handles (``acp_session.session``). Those members, and the
    few entry points of the conversation layer (``open_new_session``, ``open_resumed_session``, ``start_soon``),
    are internal to the package: the API reference leaves them out (mkdocs.yml).
    """

    def __init__(self, rpc: Connection, builder: ClientBuilder, tg: TaskGroup) -> None:
        self.rpc = rpc
        self.builder = builder
        self.interactions = InteractionRegistry()
        self._protocol: ProtocolAdapter | None = None
        self._tg = tg
        self._ready = anyio.Event()
        self._initializing = False
        self._other_request_sent = False
        self.session_tracks: dict[str, SessionTrack] = {}
        """Each session's track by id (``SessionLink``; internal)."""
        self.limits = builder._limits
        self._opening = 0  # session/new requests in flight: unknown sessions' early updates are kept
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
    def protocol_version(self) -> int:
        """The protocol version agreed at ``initialize`` (1 or 2)."""
        return self.protocol.version

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

    async def _first_initialize(self, timeout: float | None = None, agent: object = None) -> None:
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

    async def _call(self, method: str, params: Any, decode: Callable[[bytes], T], timeout: float | None = None) -> T:
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

    async def _call_auth(
        self, method: str, params: Any, decode: Callable[[bytes], T], timeout: float | None = None
    ) -> T:
        """``_call`` for the calls an agent refuses until the user logs in (session/new, resume, load)."""
        try:
            return await self._call(method, params, decode, timeout)
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

    def request(self, method: str, params: Any = None, *, timeout: float | None = None) -> SentRequest[Any]:
        """Send an extension request (``_``-prefixed) or a schema method by name; the result is plain JSON
        for extensions and the generated type for schema methods. ``timeout``: see ``SentRequest``."""
        if method == "initialize":
            raise ValueError("use ClientConnection.initialize()")
        spec = AGENT_METHODS.get(method)
        decode = json_decode if spec is None else decoder(spec.result)
        if spec is None:
            _ext_name(method)
        return SentRequest(self.rpc_request(method, params, decode, timeout))

    async def notify(self, method: str, params: Any = None) -> None:
        """Send an extension notification (``_``-prefixed)."""
        await self.rpc_notify(_ext_name(method), params)

    # -- auth ------------------------------------------------------------------------------------------------

    @property
    def login_methods(self) -> list[LoginMethod]:
        """The agent's auth methods as ``LoginMethod`` values: every shape of both versions (``agent``,
        ``terminal``, codex-acp's ``env_var``, ``_meta`` terminal commands), unknown ones kept."""
        return login_methods(self.auth_methods)

    async def authenticate(self, method_id: str) -> LoginAuthResponse:
        """Log in with an advertised protocol-driven method: v2 ``auth/login``, v1 ``authenticate``
        (ACP2-029, ACP2-061). A terminal method is never sent (ACP1-014): run
        ``LoginMethod.terminal_command(...)`` in a terminal instead."""
        methods = self.login_methods
        if not methods:
            raise CapabilityNotSupported("auth/login", "authMethods")
        method = next((m for m in methods if m.method_id == method_id), None)
        if method is None:
            raise ValueError(f"auth method {method_id!r} was not advertised")
        agent_shape = isinstance(method.raw, AuthMethodAgent)
        if not agent_shape and not (self.protocol_version == 1 and method.is_protocol_login):
            raise CapabilityNotSupported("auth/login", f"a protocol-driven login flow for {method_id!r}")
        return await self._call("auth/login", LoginAuthRequest(method_id=method_id), decoder(LoginAuthResponse))

    login = authenticate

    async def logout(self) -> LogoutAuthResponse:
        """``auth/logout``; only when the agent advertised auth methods (ACP2-062)."""
        if not self.auth_methods:
            raise CapabilityNotSupported("auth/logout", "authMethods")
        return await self._call("auth/logout", LogoutAuthRequest(), decoder(LogoutAuthResponse))

    # -- sessions ----------------------------------------------------------------------------------------------

    def _session_caps(self, method: str) -> SessionCapabilities:
        caps = self.agent_capabilities.session
        if not isinstance(caps, SessionCapabilities):
            raise CapabilityNotSupported(method, "session")
        return caps

    def prompt_capabilities(self) -> PromptCapabilities | None:
        """The agent's ``session.prompt`` capabilities, or None if it advertised none."""
        caps = self.agent_capabilities.session
        prompt = caps.prompt if isinstance(caps, SessionCapabilities) else None
        return prompt if isinstance(prompt, PromptCapabilities) else None

    def _roots(
        self,
        method: str,
        cwd: str | os.PathLike[str],
        mcp_servers: Sequence[McpServer],
        additional_directories: Sequence[str | os.PathLike[str]],
    ) -> tuple[str, Any, Any]:
        caps = self._session_caps(method)
        cwd_text = _absolute(cwd, "cwd")
        dirs = [_absolute(d, "additional directory") for d in additional_directories]
        if dirs and caps.additional_directories in (None, msgspec.UNSET):
            raise CapabilityNotSupported(method, "session.additionalDirectories")
        mcp = caps.mcp if not isinstance(caps.mcp, msgspec.UnsetType) else None
        for server in mcp_servers:
            kind = (
                "stdio" if isinstance(server, McpServerStdio) else "http" if isinstance(server, McpServerHttp) else ""
            )
            if not kind or mcp is None or getattr(mcp, kind) in (None, msgspec.UNSET):
                raise CapabilityNotSupported(method, f"session.mcp.{kind or type(server).__name__}")
        return cwd_text, dirs or msgspec.UNSET, list(mcp_servers) or msgspec.UNSET

    async def new_session(
        self,
        cwd: str | os.PathLike[str],
        mcp_servers: Sequence[McpServer] = (),
        additional_directories: Sequence[str | os.PathLike[str]] = (),
        *,
        timeout: float | None = None,
    ) -> ActiveSession:
        """``session/new``: returns a handle; updates sent before the response are already tracked.

        ``timeout`` (seconds; None: no limit, the default) withdraws the request with ``$/cancel_request`` and
        raises ``RequestTimeout`` when the agent has not answered in time. The same holds for the
        ``timeout`` of every other call here and on ``ActiveSession``."""
        session, _ = await self.open_new_session(cwd, mcp_servers, additional_directories, timeout=timeout)
        return session

    async def open_new_session(
        self,
        cwd: str | os.PathLike[str],
        mcp_servers: Sequence[McpServer],
        additional_directories: Sequence[str | os.PathLike[str]],
        listener: UpdateListener | None = None,
        *,
        timeout: float | None = None,
    ) -> tuple[ActiveSession, NewSessionResponse]:
        """``new_session`` returning the agent's response too, with ``listener`` on the session before its first
        update is delivered (``Conversation.open``'s entry point; internal)."""
        cwd_text, dirs, servers = self._roots("session/new", cwd, mcp_servers, additional_directories)
        params = NewSessionRequest(cwd=cwd_text, additional_directories=dirs, mcp_servers=servers)
        self._opening += 1
        try:
            response = await self._call_auth("session/new", params, _NEW, timeout)
        finally:
            self._opening -= 1
        if not self._opening:
            self._drop_provisional(keep=response.session_id)
        track = self.session_track(response.session_id)
        if listener is not None:
            track.listen(listener)
        track.early = None
        if isinstance(response.config_options, list) and not track.config_options:
            track.config_options = list(response.config_options)  # an earlier config_option_update is newer
        self.protocol.session_opened(response.session_id, cwd_text, dirs or [])
        return ActiveSession(self, response.session_id), response

    async def resume_session(
        self,
        session_id: str,
        cwd: str | os.PathLike[str],
        *,
        replay_from: ReplayFrom | Literal["start"] | None = None,
        mcp_servers: Sequence[McpServer] = (),
        additional_directories: Sequence[str | os.PathLike[str]] = (),
        timeout: float | None = None,
    ) -> ActiveSession:
        """``session/resume`` with the session's cwd (ACP2-068); replayed updates reach the handlers first."""
        session, _ = await self.open_resumed_session(
            session_id, cwd, replay_from, mcp_servers, additional_directories, timeout=timeout
        )
        return session

    async def open_resumed_session(
        self,
        session_id: str,
        cwd: str | os.PathLike[str],
        replay_from: ReplayFrom | Literal["start"] | None,
        mcp_servers: Sequence[McpServer],
        additional_directories: Sequence[str | os.PathLike[str]],
        listener: UpdateListener | None = None,
        *,
        timeout: float | None = None,
    ) -> tuple[ActiveSession, ResumeSessionResponse]:
        """``resume_session`` returning the agent's response too, with ``listener`` on the session before the
        replay starts (``Conversation.resume`` and ``reconnect``'s entry point; internal)."""
        cwd_text, dirs, servers = self._roots("session/resume", cwd, mcp_servers, additional_directories)
        replay: Any = (
            ReplayFromStart() if replay_from == "start" else msgspec.UNSET if replay_from is None else replay_from
        )
        params = ResumeSessionRequest(
            session_id=session_id, cwd=cwd_text, additional_directories=dirs, mcp_servers=servers, replay_from=replay
        )
        track = self.session_track(session_id)
        remove = track.listen(listener, take_early=False) if listener is not None else None
        try:
            response = await self._call_auth("session/resume", params, _RESUME, timeout)
        except BaseException:
            if remove is not None:
                remove()
            raise
        track.closed = False
        if isinstance(response.config_options, list):
            track.config_options = list(response.config_options)
        self.protocol.session_opened(session_id, cwd_text, dirs or [])
        await self._updates_drained()
        return ActiveSession(self, session_id), response

    async def start_conversation(
        self,
        cwd: str | os.PathLike[str],
        *,
        mcp_servers: Sequence[McpServer] = (),
        additional_directories: Sequence[str | os.PathLike[str]] = (),
        max_history_size: int | None = None,
    ) -> Conversation:
        """Open a new session with a ``Conversation`` folding its updates from the very first one."""
        from .conversation.conversation import Conversation

        return await Conversation.open(
            self,
            cwd,
            mcp_servers=mcp_servers,
            additional_directories=additional_directories,
            max_history_size=max_history_size,
        )

    async def list_sessions(
        self, cwd: str | os.PathLike[str] | None = None, *, timeout: float | None = None
    ) -> AsyncIterator[SessionInfo]:
        """Every session the agent lists, across all pages (a missing ``nextCursor`` ends the listing);
        ``timeout`` limits each page's request."""
        self._session_caps("session/list")
        if not self.supports("session/list"):
            raise CapabilityNotSupported("session/list", "sessionCapabilities.list")
        filter_cwd: Any = msgspec.UNSET if cwd is None else _absolute(cwd, "cwd")
        cursor: Any = msgspec.UNSET
        seen: set[str] = set()
        while True:
            page = await self._call("session/list", ListSessionsRequest(cwd=filter_cwd, cursor=cursor), _LIST, timeout)
            for info in page.sessions:
                yield info
            if not isinstance(page.next_cursor, str) or page.next_cursor in seen:
                return
            seen.add(page.next_cursor)
            cursor = page.next_cursor

    async def delete_session(self, session_id: str, *, timeout: float | None = None) -> None:
        """``session/delete``; deleting an unknown session (-32002) counts as done."""
        caps = self._session_caps("session/delete")
        if caps.delete in (None, msgspec.UNSET):
            raise CapabilityNotSupported("session/delete", "session.delete")
        with suppress(ResourceNotFound):
            await self._call(
                "session/delete", DeleteSessionRequest(session_id=session_id), decoder(DeleteSessionResponse), timeout
            )
        self.session_tracks.pop(session_id, None)

    def session(self, session_id: str) -> ActiveSession:
        """A handle for a session this connection already has (e.g. from ``new_session``)."""
        self.session_track(session_id)
        return ActiveSession(self, session_id)

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
        if not self._opening or self._provisional >= self.limits.early_sessions:
            self.unknown_session_updates += 1
            return None
        self._provisional += 1
        track = self.session_tracks[session_id] = SessionTrack(session_id, max_cancellable=self.limits.cancellable)
        track.early = []  # perhaps the session a pending session/new is creating
        return track

    def _drop_provisional(self, keep: str) -> None:
        """No session/new is in flight any more: forget the tracks kept for unknown sessions meanwhile."""
        for session_id in [s for s, t in self.session_tracks.items() if t.early is not None and not t.listeners]:
            if session_id != keep:
                del self.session_tracks[session_id]
        self._provisional = 0

    def watch_prompt(self, track: SessionTrack, prompt: TrackedPrompt, after: Callable[[], None]) -> None:
        """Settle ``prompt`` the moment its answer is read, in wire order with the updates around it; then
        ``after()`` (the protocol's end of the exchange)."""

        def answered(request: PendingRequest[Any]) -> None:
            try:
                track.settle(prompt, request.outcome(), None)
            except AcpError as exc:
                track.settle(prompt, None, self.auth_error(exc, "session/prompt"))
            after()

        prompt.request.add_done_callback(answered)

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

    async def _updates_drained(self) -> None:
        while self._update_inflight:
            await self._updates_idle.wait()

    async def decide_permission(self, request: RequestPermissionRequest) -> RequestPermissionResponse:
        subject = request.subject
        tool_call_id: str | None = None
        terminal_id: str | None = None
        if isinstance(subject, ToolCallPermissionSubject):
            tool_call_id = subject.tool_call.tool_call_id
        elif isinstance(subject, CommandPermissionSubject):
            tool_call_id = subject.tool_call_id if isinstance(subject.tool_call_id, str) else None
            terminal_id = subject.terminal_id if isinstance(subject.terminal_id, str) else None
        fn = self.builder._permission
        if fn is None:
            _log.warning("no permission handler: answering %r with the cancelled outcome", request.title)
            return _CANCELLED_PERMISSION
        item = Interaction("permission", request.session_id, tool_call_id, terminal_id, request)

        async def decide(params: RequestPermissionRequest) -> RequestPermissionResponse:
            return _permission_response(await call_handler(fn, params))

        answer = await self._decide(item, decide, lambda: _CANCELLED_PERMISSION)
        return _offered_only(request, answer)

    async def _decide(self, item: Interaction, fn: Callable[[Any], Any], cancelled: Callable[[], T]) -> T:
        """Run an interactive request's handler, unless ``cancel_active_work`` covers the request; a handler that
        fails, or is cancelled or withdrawn while it decides, gets the ``cancelled()`` answer (never an approval;
        the failure is logged here, nothing of it reaches the agent)."""
        receipt = self.rpc.request_receipt()
        if self._declines(item, receipt):
            return cancelled()  # its work was cancelled before its handler could start
        try:
            answer: T = await self.interactions.run(item, fn, cancelled)
        except Exception:
            _log.exception("the %s handler failed; answering with the cancelled outcome", item.kind)
            return cancelled()
        if self._declines(item, receipt) or anyio.current_effective_deadline() == -math.inf:
            return cancelled()  # cancelled (or withdrawn) while the handler was deciding
        return answer

    def _declines(self, item: Interaction, receipt: int | None) -> bool:
        """Whether ``cancel_active_work`` covers this request: it was read before the cancelled work ended and
        its subject is not background work (which keeps running)."""
        track = self.session_tracks.get(item.session_id or "")
        if track is None or receipt is None or receipt >= track.cancel_barrier:
            return False
        return not item.subject_in(track.background)

    def waiting_interactions(self, session_id: str, background: frozenset[tuple[str, str]]) -> int:
        """Interactive requests of ``session_id`` read but still waiting for a handler slot (they will be
        declined when they start), for ``cancel_active_work``'s count."""
        count = 0
        for method, params in self.rpc.waiting_requests():
            if method not in ("session/request_permission", "elicitation/create") or params is None:
                continue
            try:
                peek = _PEEK_INTERACTION.decode(params)
            except msgspec.DecodeError:
                continue
            if peek.sessionId != session_id:
                continue
            tool_call = peek.toolCall or (peek.subject or {}).get("toolCall") or {}
            tool_call_id = tool_call.get("toolCallId") if isinstance(tool_call, dict) else None
            if ("tool_call", tool_call_id) not in background:
                count += 1
        return count

    async def decide_elicitation(self, request: CreateElicitationRequest) -> CreateElicitationResponse:
        fn = self.builder._elicitation
        mode = (
            "form"
            if isinstance(request, ElicitationFormMode)
            else "url"
            if isinstance(request, ElicitationUrlMode)
            else ""
        )
        if fn is None or mode not in self.builder._elicitation_modes:
            return ElicitationCancelAction()  # a mode we did not advertise, or unknown (ACP2-025)
        assert isinstance(request, (ElicitationFormMode, ElicitationUrlMode))
        session_id = request.session_id if isinstance(request.session_id, str) else None
        tool_call_id = request.tool_call_id if isinstance(request.tool_call_id, str) else None
        item = Interaction("elicitation", session_id, tool_call_id, None, request)
        answer: CreateElicitationResponse = await self._decide(item, fn, ElicitationCancelAction)
        return answer


def _permission_response(answer: Any) -> RequestPermissionResponse:
    if isinstance(answer, RequestPermissionResponse):
        return answer
    if isinstance(answer, (SelectedPermissionOutcome, CancelledPermissionOutcome)):
        return RequestPermissionResponse(outcome=answer)
    if isinstance(answer, str):
        return RequestPermissionResponse(outcome=SelectedPermissionOutcome(option_id=answer))
    if answer is None:
        return _CANCELLED_PERMISSION
    raise TypeError(f"a permission handler returned {type(answer).__name__}")


class _InteractionPeek(msgspec.Struct):
    """The few fields of a waiting permission/elicitation request that ``cancel_active_work`` counts by."""

    sessionId: Any = None
    toolCall: Any = None
    subject: Any = None


_PEEK_INTERACTION = msgspec.json.Decoder(_InteractionPeek)


def _offered_only(request: RequestPermissionRequest, response: RequestPermissionResponse) -> RequestPermissionResponse:
    """A selected option the agent never offered is not an approval: it becomes cancelled (and is logged)."""
    outcome = response.outcome
    if isinstance(outcome, SelectedPermissionOutcome):
        offered = {option.option_id for option in request.options}
        if outcome.option_id not in offered:
            _log.warning(
                "the permission handler chose %r, which the agent did not offer (%s): answering cancelled",
                outcome.option_id,
                ", ".join(sorted(offered)) or "no options",
            )
            return _CANCELLED_PERMISSION
    return response


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


if TYPE_CHECKING:

    def _is_session_link(connection: ClientConnection) -> SessionLink:
        return connection  # checked by mypy: ClientConnection implements SessionLink
