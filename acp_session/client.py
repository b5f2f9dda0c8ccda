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
from .codec import convert, decoder
from .errors import AcpError, AuthRequired, InitializeTimeout, ResourceNotFound
from .interactions import Interaction, InteractionRegistry, call_handler
from .mcp.servers import McpServerConfig, check_transports
from .protocol.base import PromptExchange, ProtocolAdapter
from .protocol.capabilities import (
    PREVIEW_METHODS,
    REQUIRED_CAPABILITY,
    auth_status_change,
    pushes_auth_status,
    system_prompt_modes,
)
from .protocol.negotiate import DEFAULT_INITIALIZE_TIMEOUT, SUPPORTED_VERSIONS, negotiate
from .protocol.routes import ClientOffer
from .protocol.v1_offer import v1_initialize_params
from .rpc import Connection, PendingRequest, json_decode
from .schema import unstable as mu
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
    NewSessionResponse,
    PromptCapabilities,
    ReplayFrom,
    ReplayFromStart,
    RequestPermissionRequest,
    RequestPermissionResponse,
    ResumeSessionResponse,
    SelectedPermissionOutcome,
    SessionCapabilities,
    SessionInfo,
    TerminalAuthCapabilities,
    TextContent,
    ToolCallPermissionSubject,
    UpdateSessionNotification,
)
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
    from .mcp.host import BuiltinServers
    from .providers import FileSystemProvider, TerminalProvider
    from .registry import AgentCommand, Registry
    from .schema.v1 import types as v1
    from .session import SessionLink

__all__ = ["PROTOCOL_VERSION", "ClientBuilder", "ClientConnection", "ElicitationMode"]

PROTOCOL_VERSION = 2
"""The newest protocol version this library speaks (and offers first); version 1 is spoken too."""
_log = logging.getLogger("acp_session.client")
T = TypeVar("T")
ElicitationMode = Literal["form", "url"]
SystemPromptInput = str | Sequence[ContentBlock] | mu.SystemPrompt
"""A system prompt (Preview): its text, its content blocks, or the wire value with its mode."""
Handler = Callable[[Any], Any]
Fallback = Callable[[str, bytes], Any]


def _ext_name(method: str) -> str:
    if not method.startswith("_"):
        raise ValueError(f"extension methods must start with '_' (got {method!r})")
    return method


def _no_bind(session_id: str | None, cwd: str, dirs: list[str]) -> None:
    """``_with_builtin_tools``'s bind when no built-in MCP server was added."""


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
        self._auth_status: Handler | None = None
        self._subagents = False
        self._fallback_request: Fallback | None = None
        self._fallback_notification: Fallback | None = None
        self._transcript: str | os.PathLike[str] | None = None
        self._versions: tuple[int, ...] = SUPPORTED_VERSIONS
        self._file_system: Callable[[], FileSystemProvider] | None = None
        self._fs_access = (False, False)  # (read, write) advertised with a file-system provider
        self._terminals: Callable[[], TerminalProvider] | None = None
        self._own_terminals = False  # built-in terminals: started and stopped with each connection
        self._tools_over_mcp = True  # v2 agents get the providers as an MCP server (tools_over_mcp)
        self._limits = DEFAULT_LIMITS

    def limits(
        self,
        *,
        early_sessions: int | None = None,
        early_updates: int | None = None,
        cancellable: int | None = None,
        answer_bytes: int | None = None,
        parked_requests: int | None = None,
    ) -> ClientBuilder:
        """Change what a connection keeps at most (``Limits``; the defaults are documented there and in
        docs/robustness.md). Omitted ones keep their value."""
        changes = {
            "early_sessions": early_sessions,
            "early_updates": early_updates,
            "cancellable": cancellable,
            "answer_bytes": answer_bytes,
            "parked_requests": parked_requests,
        }
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

    def with_subagents(self, enabled: bool = True) -> ClientBuilder:
        """Ask a version 1 agent for subagent (child) sessions: ``clientCapabilities.subagents``, the v1 opt-in
        (v2 agents report them to every client). Off by default; a ``Conversation`` folds the children either way."""
        self._subagents = enabled
        return self

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
            subagents=self._subagents,
        )

    def v1_initialize_request(self) -> v1.InitializeRequest:
        """What ``initialize`` advertises to a version 1 agent, as the v1 type: the same identity and capabilities,
        plus ``fs`` and ``terminal`` exactly when a provider for them is set (``with_file_system`` /
        ``with_terminals`` or ``on_file_system`` / ``on_terminals``), i.e. exactly when the v1 adapter registers
        their methods (``acp_session.protocol.v1_offer``, which the negotiation sends as plain JSON)."""
        from .schema.v1 import types as v1  # the v1 types load only for a v1 agent, or on this call
        from .schema.v1 import unstable as v1u

        kind = v1u.InitializeRequest if self._subagents else v1.InitializeRequest  # subagents: v1's unstable
        return convert(v1_initialize_params(self.capabilities(), self.info, self.offer()), kind)

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

    def tools_over_mcp(self, enabled: bool = True) -> ClientBuilder:
        """Whether a protocol version 2 agent gets the file-system and terminal providers as an MCP server in
        each session it opens or resumes (the default; needs the ``mcp`` extra). See ``docs/mcp.md``."""
        self._tools_over_mcp = enabled
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

    def on_auth_status(self, fn: Callable[[mu.AuthStatusUpdateNotification], Any]) -> ClientBuilder:
        """Each auth state change the agent pushes (Preview ``auth/status_update``, also sent by agents as the
        extension ``_auth/status_update``); ``ClientConnection.auth_state`` keeps the latest."""
        self._auth_status = fn
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
        for name, value in self._limits.connection_options().items():
            options.setdefault(name, value)
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
        except anyio.get_cancelled_exc_class() as exc:
            # rpc.aclose() (Conversation.disconnect) cancels the rpc task group's scope, which encloses this
            # task group: a task of it still waiting then ends in that cancellation, which only the rpc task
            # group may absorb. Any other cancellation comes from outside and goes on.
            if not await rpc.__aexit__(type(exc), exc, exc.__traceback__):
                raise
        except BaseException:
            await rpc.__aexit__(None, None, None)
            raise
        else:
            await rpc.__aexit__(None, None, None)

    @asynccontextmanager
    async def spawn(
        self,
        argv: str | Sequence[str] | AgentCommand,
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
        registry: Registry | str | os.PathLike[str] | None = None,
        channel: str = "stable",
        **options: Any,
    ) -> AsyncIterator[ClientConnection]:
        """Start an agent subprocess and connect to it; leaving the block shuts the process down.

        Use it with ``async with``::

            async with ClientBuilder("my-editor", "1.0").spawn(["my-agent", "--acp"]) as client:
                conversation = await client.start_conversation("/path/to/project")
                reply = await conversation.chat("hello")  # the whole turn: reply.text, reply.stop_reason

        ``argv`` is the command: a list (or any sequence) of strings is run as it is; a single string is an
        agent id of the ACP registry (``"codex-acp"``) or an alias (``"codex"``), resolved for this machine
        through ``registry`` (default: ``acp_session.registry.load_registry()``) and its ``channel``
        (``"stable"`` or ``"preview"``), a binary being downloaded into the per-user cache first (in a worker
        thread); an ``AgentCommand`` is run with its ``env`` merged over the environment chosen below. (A
        string was never run as a command: it would have been split into characters.)

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
        base_env = env if env is not None else agent_environment(env_policy, pass_env)
        if isinstance(argv, str):
            from .registry import resolve_agent

            name = argv
            argv = await anyio.to_thread.run_sync(lambda: resolve_agent(name, registry=registry, channel=channel))
        if not isinstance(argv, (str, Sequence)):  # an AgentCommand
            base_env = argv.environment(base_env)
            cwd = cwd if cwd is not None else argv.cwd
            argv = argv.argv
        process = stdio_agent(
            argv,
            cwd,
            base_env,
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
_FORK = decoder(mu.ForkSessionResponse)
_AUTH_STATUS = decoder(mu.AuthStatusResponse)
_PROVIDERS = decoder(mu.ListProvidersResponse)
_LIST = decoder(ListSessionsResponse)
_DELETE = decoder(DeleteSessionResponse)
_CANCELLED_PERMISSION = RequestPermissionResponse(outcome=CancelledPermissionOutcome())


class ClientConnection:
    """An initialized connection to an agent: session lifecycle, auth and extension calls.

    Whatever protocol version was agreed, everything here speaks the model (the v2 types); the
    ``protocol`` adapter maps it to the agent's wire.

    It is the ``SessionLink`` of its ``ActiveSession`` handles (``acp_session.session``). Those members, and the
    few entry points of the conversation layer (``open_new_session``, ``open_resumed_session``, ``start_soon``),
    are internal to the package: the API reference leaves them out (docs/api/client.md).
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
        self._tools_over_mcp = builder._tools_over_mcp
        self._builtin: BuiltinServers | None = None  # the client's tools as MCP servers (v2; first session)
        self._auth_state: mu.AuthStatusUpdateNotification | None = None
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

    @property
    def capability_record(self) -> mu.InitializeResponse:
        """The agent's whole ``initialize`` answer in the unstable schema's types, for both versions (a v1 answer
        mapped): the Preview capabilities (``session.fork``, ``session.title``, ``session.systemPrompt``,
        ``session.archive``, ``session.status``, ``auth.status``, ``providers``) are here, typed, where
        ``initialize_response`` (the stable types) has no field for them."""
        return self.protocol.capability_record

    def supports(self, method: str) -> bool:
        """Whether the agent offers ``method`` (model method names, e.g. ``session/list``) in the agreed version,
        read from the capability record: a baseline method when the agent offers sessions, any other only when
        its capability was advertised (``session/fork`` with ``session.fork``, ``auth/status`` with
        ``auth.status``, ...); extension methods (``_``-prefixed) are always allowed, unknown methods never."""
        return self.protocol.supports(method)

    def require(self, method: str) -> None:
        """Raise ``CapabilityNotSupported`` (naming the capability) unless the agent offers ``method``."""
        if not self.supports(method):
            raise CapabilityNotSupported(method, REQUIRED_CAPABILITY.get(method, "it"))

    @property
    def system_prompt_modes(self) -> frozenset[str]:
        """The ``systemPrompt`` modes (Preview) the agent accepts on new, resume and fork: empty, ``append``, or
        ``append`` and ``override``."""
        return system_prompt_modes(self.capability_record)

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
        for extensions and the generated type for schema methods. A method of the unstable schema only
        (``session/fork``, ``auth/status``, ...) is sent when the agent advertised it (``supports``), else
        ``CapabilityNotSupported``. ``timeout``: see ``SentRequest``."""
        if method == "initialize":
            raise ValueError("use ClientConnection.initialize()")
        spec = AGENT_METHODS.get(method)
        if spec is None and method in PREVIEW_METHODS:
            self.require(method)  # an unstable method only when the agent advertised it
            spec = mu.AGENT_METHODS[method]
        decode = json_decode if spec is None else decoder(spec.result)
        if spec is None:
            _ext_name(method)
        return SentRequest(self.rpc_request(method, params, decode, timeout))

    async def notify(self, method: str, params: Any = None) -> None:
        """Send an extension notification (``_``-prefixed)."""
        await self.rpc_notify(_ext_name(method), params)

    # -- auth ------------------------------------------------------------------------------------------------

    @property
    def pushes_auth_status(self) -> bool:
        """Whether the agent says it pushes its auth state: ``auth.status`` (Preview), or the extension marker
        ``authStatus`` in ``_meta`` that codex-acp and claude-agent-acp advertise."""
        return pushes_auth_status(self.capability_record)

    @property
    def auth_state(self) -> mu.AuthStatusUpdateNotification | None:
        """The agent's latest auth state (Preview): from its ``auth/status_update`` notifications and
        ``auth_status()`` answers; None until either arrived."""
        return self._auth_state

    def auth_status_changed(self, note: mu.AuthStatusUpdateNotification) -> Any:
        """An ``auth/status_update`` notification (Preview; routed by the adapter): kept, then the builder's
        ``on_auth_status`` handler."""
        self._auth_state = note
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

    async def auth_status(self, *, timeout: float | None = None) -> mu.AuthStatusResponse:
        """``auth/status`` (Preview, ``auth.status``): whether the user is logged in, with their accounts; the
        answer also becomes ``auth_state``."""
        self.require("auth/status")
        response = await self._call("auth/status", mu.AuthStatusRequest(), _AUTH_STATUS, timeout)
        self._auth_state = mu.AuthStatusUpdateNotification(
            state=response.state, accounts=response.accounts, meta=response.meta
        )
        return response

    # -- providers (Preview, ``providers``) ---------------------------------------------------------------

    async def list_providers(self, *, timeout: float | None = None) -> list[mu.ProviderInfo]:
        """``providers/list``: the model providers the agent can be pointed at, with their current settings."""
        self.require("providers/list")
        response = await self._call("providers/list", mu.ListProvidersRequest(), _PROVIDERS, timeout)
        return list(response.providers)

    async def set_provider(
        self,
        provider_id: str,
        api_type: str,
        base_url: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> None:
        """``providers/set``: point a provider at ``base_url`` speaking ``api_type`` (``openai``, ``anthropic``,
        ...), with extra request ``headers``."""
        self.require("providers/set")
        params = mu.SetProviderRequest(
            provider_id=provider_id,
            api_type=api_type,
            base_url=base_url,
            headers=dict(headers) if headers is not None else msgspec.UNSET,
        )
        await self._call("providers/set", params, decoder(mu.SetProviderResponse), timeout)

    async def disable_provider(self, provider_id: str, *, timeout: float | None = None) -> None:
        """``providers/disable``: stop using a provider that is not required."""
        self.require("providers/disable")
        params = mu.DisableProviderRequest(provider_id=provider_id)
        await self._call("providers/disable", params, decoder(mu.DisableProviderResponse), timeout)

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
        mcp_servers: Sequence[McpServerConfig],
        additional_directories: Sequence[str | os.PathLike[str]],
    ) -> tuple[str, Any, Any]:
        caps = self._session_caps(method)
        cwd_text = _absolute(cwd, "cwd")
        dirs = [_absolute(d, "additional directory") for d in additional_directories]
        if dirs and caps.additional_directories in (None, msgspec.UNSET):
            raise CapabilityNotSupported(method, "session.additionalDirectories")
        protocol = self.protocol
        check_transports(method, mcp_servers, protocol.mcp_transports, protocol.version)
        return cwd_text, dirs or msgspec.UNSET, list(mcp_servers) or msgspec.UNSET

    def _system_prompt(self, method: str, system_prompt: SystemPromptInput | None, mode: str) -> Any:
        """The ``systemPrompt`` field of a session lifecycle request (Preview), checked against the agent's
        ``session.systemPrompt`` capability and its modes; omitted when None."""
        if system_prompt is None:
            return msgspec.UNSET
        if isinstance(system_prompt, mu.SystemPrompt):
            value = system_prompt
        else:
            content: list[ContentBlock] = (
                [TextContent(text=system_prompt)] if isinstance(system_prompt, str) else list(system_prompt)
            )
            value = mu.SystemPrompt(mode=mode, content=content)
        if not value.content or all(isinstance(b, TextContent) and not b.text for b in value.content):
            raise ValueError("a system prompt needs at least one non-empty content block")
        modes = self.system_prompt_modes
        if value.mode not in modes:
            needed = "session.systemPrompt" if not modes else f"session.systemPrompt.mode.{value.mode}"
            raise CapabilityNotSupported(method, needed)
        return value

    def _opening_fields(
        self,
        method: str,
        cwd: str | os.PathLike[str],
        mcp_servers: Sequence[McpServerConfig],
        additional_directories: Sequence[str | os.PathLike[str]],
        system_prompt: SystemPromptInput | None,
        system_prompt_mode: str,
    ) -> dict[str, Any]:
        """The fields every session lifecycle request (new, resume, fork) shares, each checked against what the
        agent advertised; one more shared field is one more keyword here."""
        cwd_text, dirs, servers = self._roots(method, cwd, mcp_servers, additional_directories)
        return {
            "cwd": cwd_text,
            "additional_directories": dirs,
            "mcp_servers": servers,
            "system_prompt": self._system_prompt(method, system_prompt, system_prompt_mode),
        }

    async def new_session(
        self,
        cwd: str | os.PathLike[str],
        mcp_servers: Sequence[McpServerConfig] = (),
        additional_directories: Sequence[str | os.PathLike[str]] = (),
        *,
        system_prompt: SystemPromptInput | None = None,
        system_prompt_mode: str = "append",
        timeout: float | None = None,
    ) -> ActiveSession:
        """``session/new``: returns a handle; updates sent before the response are already tracked.

        ``system_prompt`` (Preview; text, content blocks or a ``SystemPrompt``) is sent with
        ``system_prompt_mode`` (``append``, or ``override``) when the agent advertises ``session.systemPrompt``
        (and ``mode.override`` for an override); otherwise ``CapabilityNotSupported`` and nothing is sent.

        ``timeout`` (seconds; None: no limit, the default) withdraws the request with ``$/cancel_request`` and
        raises ``RequestTimeout`` when the agent has not answered in time. The same holds for the
        ``timeout`` of every other call here and on ``ActiveSession``."""
        session, _ = await self.open_new_session(
            cwd,
            mcp_servers,
            additional_directories,
            system_prompt=system_prompt,
            system_prompt_mode=system_prompt_mode,
            timeout=timeout,
        )
        return session

    async def open_new_session(
        self,
        cwd: str | os.PathLike[str],
        mcp_servers: Sequence[McpServerConfig],
        additional_directories: Sequence[str | os.PathLike[str]],
        listener: UpdateListener | None = None,
        *,
        system_prompt: SystemPromptInput | None = None,
        system_prompt_mode: str = "append",
        timeout: float | None = None,
    ) -> tuple[ActiveSession, NewSessionResponse]:
        """``new_session`` returning the agent's response too, with ``listener`` on the session before its first
        update is delivered (``Conversation.open``'s entry point; internal)."""
        fields = self._opening_fields(
            "session/new", cwd, mcp_servers, additional_directories, system_prompt, system_prompt_mode
        )
        fields["mcp_servers"], bind = await self._with_builtin_tools(fields["mcp_servers"])
        params = mu.NewSessionRequest(**fields)
        response = await self._open_session("session/new", params, _NEW, listener, timeout, bind)
        return ActiveSession(self, response.session_id), response

    async def fork_session(
        self,
        session_id: str,
        cwd: str | os.PathLike[str],
        *,
        mcp_servers: Sequence[McpServerConfig] = (),
        additional_directories: Sequence[str | os.PathLike[str]] = (),
        system_prompt: SystemPromptInput | None = None,
        system_prompt_mode: str = "append",
        timeout: float | None = None,
    ) -> ActiveSession:
        """``session/fork`` (Preview): a new session that starts from ``session_id``'s context, which is left
        unchanged. Only when the agent advertises ``session.fork`` (else ``CapabilityNotSupported``);
        ``system_prompt`` as for ``new_session`` (the spec asks for the source session's)."""
        session, _ = await self.open_forked_session(
            session_id,
            cwd,
            mcp_servers,
            additional_directories,
            system_prompt=system_prompt,
            system_prompt_mode=system_prompt_mode,
            timeout=timeout,
        )
        return session

    async def open_forked_session(
        self,
        session_id: str,
        cwd: str | os.PathLike[str],
        mcp_servers: Sequence[McpServerConfig],
        additional_directories: Sequence[str | os.PathLike[str]],
        listener: UpdateListener | None = None,
        *,
        system_prompt: SystemPromptInput | None = None,
        system_prompt_mode: str = "append",
        timeout: float | None = None,
    ) -> tuple[ActiveSession, mu.ForkSessionResponse]:
        """``fork_session`` returning the agent's response too, with ``listener`` on the new session before its
        first update (``Conversation.fork``'s entry point; internal)."""
        self.require("session/fork")
        fields = self._opening_fields(
            "session/fork", cwd, mcp_servers, additional_directories, system_prompt, system_prompt_mode
        )
        fields["mcp_servers"], bind = await self._with_builtin_tools(fields["mcp_servers"])
        params = mu.ForkSessionRequest(session_id=session_id, **fields)
        response = await self._open_session("session/fork", params, _FORK, listener, timeout, bind)
        return ActiveSession(self, response.session_id), response

    async def _open_session(
        self,
        method: str,
        params: Any,
        decode: Callable[[bytes], Any],
        listener: UpdateListener | None,
        timeout: float | None,
        bind: Callable[[str | None, str, list[str]], None],
    ) -> Any:
        """Send a request that creates a session (new, fork) and track the session it names; updates of unknown
        sessions that arrive while it is in flight are kept for it. ``bind``: see ``_with_builtin_tools``."""
        self._opening += 1
        try:
            response = await self._call_auth(method, params, decode, timeout)
        except BaseException:
            bind(None, "", [])
            raise
        finally:
            self._opening -= 1
        dirs = params.additional_directories or []
        bind(response.session_id, params.cwd, dirs)
        if not self._opening:
            self._drop_provisional(keep=response.session_id)
        track = self.session_track(response.session_id)
        if listener is not None:
            track.listen(listener)
        track.early = None
        if isinstance(response.config_options, list) and not track.config_options:
            track.config_options = list(response.config_options)  # an earlier config_option_update is newer
        self.protocol.session_opened(response.session_id, params.cwd, dirs)
        return response

    async def resume_session(
        self,
        session_id: str,
        cwd: str | os.PathLike[str],
        *,
        replay_from: ReplayFrom | Literal["start"] | None = None,
        mcp_servers: Sequence[McpServerConfig] = (),
        additional_directories: Sequence[str | os.PathLike[str]] = (),
        system_prompt: SystemPromptInput | None = None,
        system_prompt_mode: str = "append",
        timeout: float | None = None,
    ) -> ActiveSession:
        """``session/resume`` with the session's cwd (ACP2-068); replayed updates reach the handlers first.
        ``system_prompt``: as for ``new_session`` (v1: on ``session/load`` or ``session/resume``)."""
        session, _ = await self.open_resumed_session(
            session_id,
            cwd,
            replay_from,
            mcp_servers,
            additional_directories,
            system_prompt=system_prompt,
            system_prompt_mode=system_prompt_mode,
            timeout=timeout,
        )
        return session

    async def open_resumed_session(
        self,
        session_id: str,
        cwd: str | os.PathLike[str],
        replay_from: ReplayFrom | Literal["start"] | None,
        mcp_servers: Sequence[McpServerConfig],
        additional_directories: Sequence[str | os.PathLike[str]],
        listener: UpdateListener | None = None,
        *,
        system_prompt: SystemPromptInput | None = None,
        system_prompt_mode: str = "append",
        timeout: float | None = None,
    ) -> tuple[ActiveSession, ResumeSessionResponse]:
        """``resume_session`` returning the agent's response too, with ``listener`` on the session before the
        replay starts (``Conversation.resume`` and ``reconnect``'s entry point; internal)."""
        fields = self._opening_fields(
            "session/resume", cwd, mcp_servers, additional_directories, system_prompt, system_prompt_mode
        )
        fields["mcp_servers"], bind = await self._with_builtin_tools(fields["mcp_servers"])
        replay: Any = (
            ReplayFromStart() if replay_from == "start" else msgspec.UNSET if replay_from is None else replay_from
        )
        params = mu.ResumeSessionRequest(session_id=session_id, replay_from=replay, **fields)
        track = self.session_track(session_id)
        remove = track.listen(listener, take_early=False) if listener is not None else None
        try:
            response = await self._call_auth("session/resume", params, _RESUME, timeout)
        except BaseException:
            bind(None, "", [])
            if remove is not None:
                remove()
            raise
        dirs = params.additional_directories or []
        bind(session_id, params.cwd, dirs)
        track.closed = False
        if isinstance(response.config_options, list):
            track.config_options = list(response.config_options)
        self.protocol.session_opened(session_id, params.cwd, dirs)
        await self._updates_drained()
        return ActiveSession(self, session_id), response

    async def _with_builtin_tools(self, servers: Any) -> tuple[Any, Callable[[str | None, str, list[str]], None]]:
        """On a v2 connection with a file-system or terminal provider: ``servers`` plus this session's built-in
        MCP server (``acp_session.mcp.host``), and ``bind(session_id, cwd, dirs)`` to call once the agent
        answered (``None``: it refused, the server goes away). Otherwise ``servers`` unchanged and a no-op."""
        if not self._tools_offered():
            return servers, _no_bind
        if self._builtin is None:
            from .mcp.host import BuiltinServers

            self._builtin = BuiltinServers(
                self.protocol.mcp_transports, self._file_system, self._terminals, self.file_written, self.start_soon
            )
            if self._builtin.mode == "acp":  # the agent reaches each session's server with mcp/message requests
                from .schema.unstable import MessageMcpRequest

                self.rpc.on_request("mcp/message", self._builtin.on_message, decoder(MessageMcpRequest))
            hooks = getattr(self.protocol, "session_close_hooks", None)
            if isinstance(hooks, list):
                hooks.append(self._builtin_session_closed)
        if self._builtin.mode is None:
            _log.warning("the agent takes neither acp nor stdio MCP servers: the client's tools are not offered to it")
            return servers, _no_bind
        listed = servers if isinstance(servers, list) else []
        config, bind_server = await self._builtin.add({str(getattr(s, "name", "")) for s in listed})
        providers = (self._file_system, self._terminals)

        def bind(session_id: str | None, cwd: str, dirs: list[str]) -> None:
            if session_id is not None:
                for provider in providers:
                    opened = getattr(provider, "open_session", None)
                    if opened is not None:
                        opened(session_id, cwd, dirs)
            bind_server(session_id)

        return [*listed, config], bind

    def _tools_offered(self) -> bool:
        has_provider = self._file_system is not None or self._terminals is not None
        return self._tools_over_mcp and has_provider and self.protocol.version >= 2

    @property
    def tools_over_mcp_transport(self) -> str | None:
        """How each session of this connection gets the client's file system and terminals as an MCP server:
        ``"acp"`` (MCP-over-ACP), ``"stdio"`` (the relay), or None (protocol version 1, which calls the providers
        directly; no provider; ``tools_over_mcp(False)``; or an agent that takes neither transport)."""
        if not self._tools_offered():
            return None
        transports = self.protocol.mcp_transports
        return "acp" if "acp" in transports else "stdio" if "stdio" in transports else None

    def _builtin_session_closed(self, session_id: str) -> None:
        if self._builtin is not None:
            self._builtin.session_closed(session_id)
        for provider in (self._file_system, self._terminals):
            closed = getattr(provider, "close_session", None)
            if closed is not None:
                self.run_soon(closed, session_id)

    async def start_conversation(
        self,
        cwd: str | os.PathLike[str],
        *,
        mcp_servers: Sequence[McpServerConfig] = (),
        additional_directories: Sequence[str | os.PathLike[str]] = (),
        max_history_size: int | None = None,
        system_prompt: SystemPromptInput | None = None,
        system_prompt_mode: str = "append",
    ) -> Conversation:
        """Open a new session with a ``Conversation`` folding its updates from the very first one
        (``system_prompt``: see ``new_session``)."""
        from .conversation.conversation import Conversation

        return await Conversation.open(
            self,
            cwd,
            mcp_servers=mcp_servers,
            additional_directories=additional_directories,
            max_history_size=max_history_size,
            system_prompt=system_prompt,
            system_prompt_mode=system_prompt_mode,
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
        if not listeners and track.parent is not None:
            listeners = self._root_listeners(track)
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
        if (
            track is not None
            and track.early is None
            and not track.listeners
            and track.parent is None
            and not self._update_is_async
        ):
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
        update: Any = note.update
        if type(update) is mu.SubagentUpdate and update.session_id in track.subagents:
            self._child_track(track, update)

    def _child_track(self, parent: SessionTrack, update: mu.SubagentUpdate) -> None:
        """A subagent (Preview): the parent announced a child session. Its track is made here, so the child's
        own updates are tracked and handed to the parent's listeners (a ``Conversation`` folds them into the
        child's state); its ``capabilities`` say whether the client may cancel it."""
        child = self.session_tracks.get(update.session_id)
        if child is None:
            child = self.session_track(update.session_id)
        if child.parent is None and update.session_id != parent.session_id:
            child.parent = parent.session_id
        caps = update.capabilities
        if caps is not msgspec.UNSET:
            cancel = getattr(caps, "cancel", None)
            child.cancellable = cancel is not None and cancel is not msgspec.UNSET

    def _root_listeners(self, track: SessionTrack) -> list[UpdateListener]:
        """A child session's updates go to the listeners of the nearest ancestor that has some."""
        seen = 0
        while track.parent is not None and seen < 64:  # a cycle an agent made up cannot loop
            parent = self.session_tracks.get(track.parent)
            if parent is None:
                return []
            if parent.listeners:
                return parent.listeners
            track, seen = parent, seen + 1
        return []

    def _hand_run(self, track: SessionTrack, run: list[UpdateSessionNotification]) -> None:
        """A tracked stretch of one session's updates to its listeners: in one call to a lone
        ``BatchUpdateListener``, else note by note; kept for later while a ``session/new`` may still claim it."""
        listeners = track.listeners
        if not listeners and track.parent is not None:
            listeners = self._root_listeners(track)
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
