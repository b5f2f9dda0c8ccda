"""``ClientBuilder``: identity, capabilities and typed handlers; ``connect``/``spawn`` make a ``ClientConnection``.

Handlers receive generated types and may be plain functions or coroutine functions. Capabilities that depend
on a handler (elicitation modes) are derived from what was registered, so they cannot disagree.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Any, Literal

import anyio
import msgspec

from .._version import __version__
from ..codec import convert
from ..errors import ConnectionClosed, InitializeTimeout
from ..protocol.negotiate import DEFAULT_INITIALIZE_TIMEOUT, SUPPORTED_VERSIONS
from ..protocol.routes import SUBAGENTS_META, ClientOffer
from ..protocol.v1_offer import v1_initialize_params
from ..rpc import Connection
from ..schema import unstable as mu
from ..schema.types import (
    ClientAuthCapabilities,
    ClientCapabilities,
    CompleteElicitationNotification,
    CreateElicitationRequest,
    ElicitationCapabilities,
    ElicitationFormCapabilities,
    ElicitationUrlCapabilities,
    Implementation,
    TerminalAuthCapabilities,
    UpdateSessionNotification,
)
from ..session import DEFAULT_LIMITS
from ..transport import AgentProcess, FrameTransport, Transport, stdio_agent
from ..transport.environment import EnvPolicy, agent_environment

if TYPE_CHECKING:
    from opentelemetry.metrics import MeterProvider
    from opentelemetry.trace import TracerProvider

    from ..providers import FileSystemProvider, TerminalProvider
    from ..registry import AgentCommand, Registry
    from ..schema.v1 import types as v1
    from ..telemetry import Instrumentation
    from ..transport.recording import TranscriptTarget
    from ..transport.remote import RemoteDialer
from ._settings import Fallback, Handler, PolicyListener
from .connection import ClientConnection, ext_name, hub_of
from .permission_answers import PermissionHandler
from .permission_policy import PermissionPolicy
from .reconnect import Dialer, Reconnector, ReconnectPolicy, RedialByDefault, policy_for, recording
from .spawning import resolve_command

__all__ = ["ClientBuilder", "ElicitationMode"]

_log = logging.getLogger("acp_session.client")
_DIALER_OPTIONS = ("cookies", "ca_file", "ssl_context", "http_version", "limits")

ElicitationMode = Literal["form", "url"]


class ClientBuilder:
    """Collects the client's identity, capabilities and handlers; ``connect()`` applies them to a connection."""

    def __init__(self, name: str = "acp-session", version: str = __version__, *, title: str | None = None) -> None:
        self.info = Implementation(name=name, version=version, title=msgspec.UNSET if title is None else title)
        self.terminal_auth = False
        self.meta: dict[str, Any] | None = None
        self._update: Handler | None = None
        self._permission: Handler | None = None
        self._policy: PermissionPolicy | None = None
        self._policy_listener: PolicyListener | None = None
        self._elicitation: Handler | None = None
        self._elicitation_modes: frozenset[str] = frozenset()
        self._elicitation_complete: Handler | None = None
        self._ext_requests: dict[str, Handler] = {}
        self._ext_notifications: dict[str, Handler] = {}
        self._auth_status: Handler | None = None
        self._subagents = False
        self._fallback_request: Fallback | None = None
        self._fallback_notification: Fallback | None = None
        self._transcript: TranscriptTarget | None = None
        self._versions: tuple[int, ...] = SUPPORTED_VERSIONS
        self._file_system: Callable[[], FileSystemProvider] | None = None
        self._fs_access = (False, False)  # (read, write) advertised with a file-system provider
        self._terminals: Callable[[], TerminalProvider] | None = None
        self._own_terminals = False  # built-in terminals: started and stopped with each connection
        self._tools_over_mcp = True  # v2 agents get the providers as an MCP server (tools_over_mcp)
        self._limits = DEFAULT_LIMITS
        self._instrumentation: Instrumentation | None = None
        self._reconnect: ReconnectPolicy | bool | None = None  # None: the transport's default (see reconnect())

    def reconnect(
        self,
        enabled: bool = True,
        *,
        attempts: int = 5,
        backoff: float = 0.5,
        max_backoff: float = 10.0,
        jitter: float = 0.2,
        deadline: float = 120.0,
        initialize_timeout: float = 30.0,
        idle_timeout: float | None = 30.0,
        probe_timeout: float = 10.0,
        stable_after: float = 10.0,
    ) -> ClientBuilder:
        """Re-establish a connection whose transport dies (``ReconnectPolicy``; docs/conversation.md, "When the
        connection drops"): dial again (``spawn``: restart the agent with the same command, environment and cwd;
        a remote agent: the same URL, cookies and headers), ``initialize``, and resume every open conversation,
        whose turns in flight keep waiting. Off by default for subprocess agents, on for remote ones (whose dialer
        says ``reconnect_by_default``); ``reconnect(False)`` turns it off for those too. The budget (``attempts``,
        the growing back-off, ``deadline``) holds for a whole outage, which ends only once a connection has
        stayed up ``stable_after`` seconds: a connection that keeps dropping right after each reconnect ends in
        ``ReconnectFailed`` (``drops``)."""
        policy = ReconnectPolicy(
            attempts,
            backoff,
            max_backoff,
            jitter,
            deadline,
            initialize_timeout,
            idle_timeout,
            probe_timeout,
            stable_after,
        )
        self._reconnect = policy if enabled else False
        return self

    def reconnect_policy(self, dialer: Dialer | None = None) -> ReconnectPolicy | None:
        """The policy of a connection made through ``dialer`` (``reconnect.policy_for``); None: off."""
        return policy_for(self._reconnect, dialer)

    def limits(
        self,
        *,
        early_sessions: int | None = None,
        early_updates: int | None = None,
        cancellable: int | None = None,
        answer_bytes: int | None = None,
        parked_requests: int | None = None,
        subagents: int | None = None,
    ) -> ClientBuilder:
        """Change what a connection keeps at most (``Limits``; the defaults are documented there and in
        docs/robustness.md). Omitted ones keep their value."""
        changes = {
            "early_sessions": early_sessions,
            "early_updates": early_updates,
            "cancellable": cancellable,
            "answer_bytes": answer_bytes,
            "parked_requests": parked_requests,
            "subagents": subagents,
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
        """Ask for subagent (child) sessions: v1's ``clientCapabilities.subagents``, and ``_meta`` ``SUBAGENTS_META``
        for a host (``acp-session serve``). Off by default; a ``Conversation`` folds the children either way."""
        self._subagents = enabled
        return self

    def with_terminal_auth(self, enabled: bool = True) -> ClientBuilder:
        """Advertise that this client can run terminal authentication methods itself."""
        self.terminal_auth = enabled
        return self

    def record_transcript(self, path: TranscriptTarget | None) -> ClientBuilder:
        """Append every wire line, both directions and timestamped, to ``path`` (JSON lines; see
        ``acp_session.transcript``). For bug reports and test fixtures; None turns it off. ``path`` may also be a
        binary file opened by the caller (how it is opened is then the caller's: ``acp-session chat --record``
        refuses symbolic links); it is flushed after each line and never closed here."""
        self._transcript = path
        return self

    def instrument(
        self,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        *,
        propagate: bool = True,
        max_attribute_length: int = 1024,
        titles: bool = True,
        enabled: bool = True,
    ) -> ClientBuilder:
        """Emit OpenTelemetry spans and metrics for this builder's connections (needs the ``otel`` extra; the
        providers default to the global ones). ``propagate`` puts the current trace context into each request's
        ``_meta`` (``traceparent``, ``tracestate``). The agent's strings (names, titles, ids, error messages) go
        into spans without what looks like a credential and cut to ``max_attribute_length`` characters;
        ``titles=False`` leaves the tool call and permission titles out. ``enabled=False`` turns it off again.
        What is emitted: docs/observability.md. Without this call OpenTelemetry is never imported."""
        if not enabled:
            self._instrumentation = None
            return self
        try:
            from ..telemetry import Instrumentation
        except ImportError as exc:
            raise ImportError(
                "ClientBuilder.instrument() needs opentelemetry-api: pip install 'acp-session[otel]'"
            ) from exc
        self._instrumentation = Instrumentation(
            tracer_provider,
            meter_provider,
            propagate=propagate,
            max_attribute_length=max_attribute_length,
            titles=titles,
        )
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
        meta = {**(self.meta or {}), SUBAGENTS_META: {}} if self._subagents else self.meta
        return ClientCapabilities(auth=auth, elicitation=elicitation, meta=msgspec.UNSET if meta is None else meta)

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
        from ..schema.v1 import types as v1  # the v1 types load only for a v1 agent, or on this call
        from ..schema.v1 import unstable as v1u

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
        from ..providers import LocalFileSystem

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
        from ..providers import LocalTerminals

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
        """Every ``session/update``, in arrival order, including sessions this process has no handle for. A
        ``BatchUpdateListener`` gets each run one read brought in as ``many(notes)``, after the sessions' own
        listeners (docs/client.md)."""
        self._update = fn
        return self

    def on_request_permission(self, fn: PermissionHandler) -> ClientBuilder:
        """Answer permission requests: ``fn(request)``, plain or async, returns a ``PermissionAnswer`` (an option id).

        Without one, every request is answered with the cancelled outcome (never an approval).
        """
        self._permission = fn
        return self

    def permission_policy(
        self, policy: PermissionPolicy | None, *, on_decision: PolicyListener | None = None
    ) -> ClientBuilder:
        """Answer permission requests by ``policy``'s rules first; what it leaves to ``ask`` goes to the
        ``on_request_permission`` handler. ``on_decision(request, decision)`` (a plain function) is told of each
        request the policy answered itself, so an application can show and record it. None: no policy."""
        self._policy = policy
        self._policy_listener = on_decision
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
        extension ``_auth/status_update``); ``ClientConnection.auth.state`` keeps the latest."""
        self._auth_status = fn
        return self

    def on_ext_request(self, method: str, fn: Callable[[Any], Any]) -> ClientBuilder:
        """Answer an extension request (``_``-prefixed); ``fn`` gets the params as plain JSON values."""
        self._ext_requests[ext_name(method)] = fn
        return self

    def on_ext_notification(self, method: str, fn: Callable[[Any], Any]) -> ClientBuilder:
        self._ext_notifications[ext_name(method)] = fn
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
        transport: Transport | FrameTransport,
        *,
        initialize_timeout: float | None = DEFAULT_INITIALIZE_TIMEOUT,
        dialer: Dialer | None = None,
        **options: Any,
    ) -> AsyncIterator[ClientConnection]:
        """Initialize over ``transport``; leaving the block closes the connection and the transport.

        ``initialize_timeout`` (seconds, default 30; None for none) bounds the ``initialize`` exchange: an agent
        that does not answer in time ends in ``InitializeTimeout`` (naming the agent, with its last stderr
        lines). ``options`` go to ``acp_session.rpc.Connection`` (queue sizes, frame limit, ...). ``dialer``
        opens another transport to the same agent (``acp_session.client.reconnect.Dialer``): with a reconnect
        policy (``reconnect()``) the connection comes back through it when ``transport`` dies.
        """
        policy = self.reconnect_policy(dialer)
        if policy is not None and dialer is None:
            raise ValueError("a reconnect policy needs a dialer that can open the transport again")
        # Entered by hand, not with ``async with``: a task group wraps the body's exception in an
        # ExceptionGroup, and callers should see ``ProtocolVersionMismatch`` or their own error as raised.
        source = transport  # the agent's own transport (command line, stderr), before any wrapping
        peer_name = getattr(source, "name", None)
        if isinstance(peer_name, str):
            options.setdefault("peer_name", peer_name)
        for name, value in self._limits.connection_options().items():
            options.setdefault(name, value)
        wrap = recording(self._transcript)
        transport = wrap(transport)
        rpc = Connection(transport, **options)
        await rpc.__aenter__()
        try:
            tg = anyio.create_task_group()
            await tg.__aenter__()
            try:
                client = ClientConnection(rpc, self, tg)
                terminals = client.tools.terminals if self._own_terminals else None
                if terminals is not None:
                    await terminals.__aenter__()  # type: ignore[attr-defined]
                    tg.start_soon(_end_terminals_on_close, rpc, terminals)
                try:
                    try:
                        await hub_of(client).first_initialize(initialize_timeout, source)
                    except InitializeTimeout:
                        if isinstance(source, AgentProcess):  # it never said hello: no need to wait long for it
                            source.grace_period = min(source.grace_period, 0.2)
                        raise
                    if policy is not None:
                        assert dialer is not None
                        reconnector = hub_of(client).reconnector = Reconnector(
                            hub_of(client), policy, dialer, options, wrap
                        )
                        tg.start_soon(reconnector.run)
                    yield client
                finally:
                    reconnecting = hub_of(client).reconnector
                    if reconnecting is not None:
                        with anyio.CancelScope(shield=True):
                            await reconnecting.aclose()
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
    async def connect_url(
        self,
        url: str | RemoteDialer,
        *,
        headers: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
        insecure: bool = False,
        initialize_timeout: float | None = DEFAULT_INITIALIZE_TIMEOUT,
        **options: Any,
    ) -> AsyncIterator[ClientConnection]:
        """Connect to a remote agent: ``http(s)://host/acp`` (Streamable HTTP) or ``ws(s)://host/acp``
        (WebSocket), with custom ``headers`` (``Authorization``...); TLS is verified unless ``insecure=True``.
        Needs the ``remote`` extra. ``url`` may be a ``RemoteDialer`` (its cookie jar, TLS and limits; a
        reconnect reuses it); the ``RemoteDialer`` options (``ca_file``, ``http_version``, ``limits``,
        ``cookies``) may also be passed here. ``initialize_timeout`` and the other options: see ``connect``.
        A server that refuses the connection before ``initialize`` is answered raises ``RemoteHttpError`` (the
        status) or ``RemoteTransportError``. Afterwards a lost connection is re-established through the dialer
        (the reconnect policy is on by default here: ``reconnect()``; docs/conversation.md, "When the connection
        drops"); with ``reconnect(False)`` it fails what waits with ``ConnectionClosed`` (see ``docs/remote.md``)."""
        from ..transport.remote import RemoteDialer

        dialer_options = {k: options.pop(k) for k in _DIALER_OPTIONS if k in options}
        if isinstance(url, RemoteDialer):
            dialer = url
        else:
            dialer = RemoteDialer(url, headers=headers, insecure=insecure, **dialer_options)
        async with dialer.open() as transport:
            entered = False
            try:
                redial = RedialByDefault(dialer.open)  # a reconnect reopens the same URL, cookies and headers
                async with self.connect(
                    transport, initialize_timeout=initialize_timeout, dialer=redial, **options
                ) as client:
                    entered = True
                    yield client
            except ConnectionClosed:
                failure = getattr(transport, "failure", None)
                if entered or failure is None:
                    raise
                raise failure from None

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
        command, cwd, base_env, in_use = await resolve_command(argv, cwd, base_env, registry, channel)

        def dial() -> AbstractAsyncContextManager[AgentProcess]:
            """The agent again, as first started (a reconnect policy restarts it with this)."""
            return stdio_agent(
                command,
                cwd,
                base_env,
                own_process_group=own_process_group,
                reap_descendants=reap_descendants,
                grace_period=grace_period,
                terminate_timeout=terminate_timeout,
            )

        with in_use:  # restarts included: the connection's whole life
            process = dial()
            transport = await process.__aenter__()  # by hand, for the same reason as in connect()
            try:
                async with self.connect(
                    transport, initialize_timeout=initialize_timeout, dialer=dial, **options
                ) as client:
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
