"""``ClientConnection``: an initialized connection to an agent, the commands a user calls.

What its sessions and the protocol adapter call lives in the connection's hub (``_hub.ConnectionHub``), and
sessions are opened by ``opening``; this class only delegates, so its members are the public API.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import suppress
from typing import TYPE_CHECKING, Any, Literal

import msgspec
from anyio.abc import TaskGroup

from ..auth import LoginMethod
from ..client_errors import CapabilityNotSupported
from ..codec import decoder
from ..errors import ConnectionClosed, ResourceNotFound
from ..interactions import InteractionRegistry
from ..mcp.servers import McpServerConfig
from ..protocol.base import ProtocolAdapter
from ..protocol.capabilities import PREVIEW_METHODS, pushes_auth_status
from ..protocol.routes import ClientOffer
from ..rpc import Connection, json_decode
from ..schema import unstable as mu
from ..schema.types import (
    AGENT_METHODS,
    AgentCapabilities,
    AuthMethod,
    AuthMethodAgent,
    DeleteSessionRequest,
    DeleteSessionResponse,
    Implementation,
    InitializeResponse,
    ListSessionsRequest,
    ListSessionsResponse,
    LoginAuthRequest,
    LoginAuthResponse,
    LogoutAuthRequest,
    LogoutAuthResponse,
    ReplayFrom,
    SessionInfo,
)
from ..session import (
    SentRequest,
)
from .active_session import ActiveSession
from .reconnect import ReconnectEvent, ReconnectPolicy

if TYPE_CHECKING:
    from ..conversation.conversation import Conversation
    from ..protocol.base import ClientSide
    from ..providers import FileSystemProvider, TerminalProvider
    from ..session import Limits
    from .active_session import SessionLink
    from .builder import ClientBuilder

from ._hub import ConnectionHub
from .opening import (
    SystemPromptInput,
    absolute,
    open_forked_session,
    open_new_session,
    open_resumed_session,
    tools_over_mcp_transport,
)

__all__ = ["PROTOCOL_VERSION", "ClientConnection", "SystemPromptInput", "hub_of"]

PROTOCOL_VERSION = 2
"""The newest protocol version this library speaks (and offers first); version 1 is spoken too."""
_LIST = decoder(ListSessionsResponse)
_AUTH_STATUS = decoder(mu.AuthStatusResponse)
_PROVIDERS = decoder(mu.ListProvidersResponse)
_DELETE = decoder(DeleteSessionResponse)

ConversationOpener = Callable[..., Awaitable[Any]]
_conversation_opener: list[ConversationOpener] = []


def ext_name(method: str) -> str:
    """``method`` if it is an extension method name (``_``-prefixed), else ValueError."""
    if not method.startswith("_"):
        raise ValueError(f"extension methods must start with '_' (got {method!r})")
    return method


def set_conversation_opener(opener: ConversationOpener) -> None:
    """Install what ``ClientConnection.start_conversation`` calls: ``Conversation.open``. The package facade
    (``acp_session/__init__.py``, above both layers) installs it, so the client never imports the conversation
    layer that builds on it."""
    _conversation_opener[:] = [opener]


class ClientConnection:
    """An initialized connection to an agent: session lifecycle, auth and extension calls.

    Whatever protocol version was agreed, everything here speaks the model (the v2 types); the
    ``protocol`` adapter maps it to the agent's wire. Made by ``ClientBuilder.connect`` / ``spawn``.
    """

    def __init__(self, rpc: Connection, builder: ClientBuilder, tg: TaskGroup) -> None:
        self._builder = builder
        self._hub = ConnectionHub(self, rpc, builder, tg)

    # -- what the agent said -----------------------------------------------------------------------------

    @property
    def rpc(self) -> Connection:
        """The JSON-RPC peer (raw access: its close reason, counters, extension handlers)."""
        return self._hub.rpc

    @property
    def builder(self) -> ClientBuilder:
        """The builder this connection was made from."""
        return self._builder

    @property
    def interactions(self) -> InteractionRegistry:
        """The agent's permission and elicitation requests whose handlers are running (``acp_session.interactions``)."""
        return self._hub.interactions

    @property
    def limits(self) -> Limits:
        """The bounds this connection keeps (``ClientBuilder.limits``)."""
        return self._hub.limits

    @property
    def unknown_session_updates(self) -> int:
        """Updates for sessions this connection never opened or resumed: counted, handed only to
        ``on_session_update``, never tracked (an agent naming endless session ids cannot grow this connection)."""
        return self._hub.unknown_session_updates

    @property
    def protocol(self) -> ProtocolAdapter:
        """The negotiated protocol version's adapter (``protocol.version``)."""
        return self._hub.protocol

    @property
    def initialize_response(self) -> InitializeResponse | None:
        """The agent's ``initialize`` answer in the model's (v2) shape, whatever version was agreed."""
        return self._hub.initialize_response

    @property
    def agent_info(self) -> Implementation:
        return self._hub.agent_info

    @property
    def agent_capabilities(self) -> AgentCapabilities:
        return self._hub.agent_capabilities

    @property
    def auth_methods(self) -> list[AuthMethod]:
        return self._hub.auth_methods

    @property
    def protocol_version(self) -> int:
        """The protocol version agreed at ``initialize`` (1 or 2)."""
        return self._hub.protocol.version

    @property
    def capability_record(self) -> mu.InitializeResponse:
        """The agent's whole ``initialize`` answer in the unstable schema's types, for both versions (a v1 answer
        mapped): the Preview capabilities (``session.fork``, ``session.title``, ``session.systemPrompt``,
        ``session.archive``, ``session.status``, ``auth.status``, ``providers``) are here, typed, where
        ``initialize_response`` (the stable types) has no field for them."""
        return self._hub.capability_record

    def supports(self, method: str) -> bool:
        """Whether the agent offers ``method`` (model method names, e.g. ``session/list``) in the agreed version,
        read from the capability record: a baseline method when the agent offers sessions, any other only when
        its capability was advertised (``session/fork`` with ``session.fork``, ``auth/status`` with
        ``auth.status``, ...); extension methods (``_``-prefixed) are always allowed, unknown methods never."""
        return self._hub.supports(method)

    def require(self, method: str) -> None:
        """Raise ``CapabilityNotSupported`` (naming the capability) unless the agent offers ``method``."""
        self._hub.require(method)

    @property
    def system_prompt_modes(self) -> frozenset[str]:
        """The ``systemPrompt`` modes (Preview) the agent accepts on new, resume and fork: empty, ``append``, or
        ``append`` and ``override``."""
        return self._hub.system_prompt_modes

    @property
    def file_system(self) -> FileSystemProvider | None:
        """The provider answering v1 ``fs/*`` calls, if the builder set one."""
        return self._hub.file_system

    @property
    def terminals(self) -> TerminalProvider | None:
        """The provider answering v1 ``terminal/*`` calls, if the builder set one."""
        return self._hub.terminals

    @property
    def offer(self) -> ClientOffer:
        """What this connection offers the agent (``ClientBuilder.offer()`` when it was made): which of the
        protocol adapter's incoming routes are registered."""
        return self._hub.offer

    # -- reconnecting ------------------------------------------------------------------------------------

    @property
    def reconnect_policy(self) -> ReconnectPolicy | None:
        """The reconnect policy in force (``ClientBuilder.reconnect``), None when a drop ends the connection."""
        reconnector = self._hub.reconnector
        return None if reconnector is None else reconnector.policy

    @property
    def reconnects(self) -> int:
        """How many times this connection came back after its transport died."""
        reconnector = self._hub.reconnector
        return 0 if reconnector is None else reconnector.reconnects

    @property
    def reconnecting(self) -> bool:
        """True while a lost transport is being replaced (calls wait for it; ``rpc`` is the old one)."""
        reconnector = self._hub.reconnector
        return reconnector is not None and reconnector.reconnecting

    async def wait_closed(self) -> ConnectionClosed:
        """Wait until this connection is closed for good and return why: its transport's end, or with a reconnect
        policy, a local close or ``ReconnectFailed`` (a drop it recovers from does not count)."""
        reconnector = self._hub.reconnector
        if reconnector is None:
            return await self._hub.rpc.wait_closed()
        await reconnector.finished.wait()
        return reconnector.failure or await self._hub.rpc.wait_closed()

    def on_reconnect(self, fn: Callable[[ReconnectEvent], Any]) -> Callable[[], None]:
        """Call ``fn`` with each ``Reconnecting``, ``Reconnected`` and ``ReconnectGaveUp`` event of this connection
        (``acp_session.client.reconnect``); returns a function that removes it. Without a policy none comes."""
        listeners = self._hub.reconnector.listeners if self._hub.reconnector is not None else []
        listeners.append(fn)
        return lambda: listeners.remove(fn) if fn in listeners else None

    async def initialize(self, *, timeout: float | None = None) -> InitializeResponse:
        """Repeat ``initialize`` (allowed only before any other request). A failed repeat keeps the previous one.
        ``timeout`` ends the wait with ``InitializeTimeout``."""
        return await self._hub.initialize(timeout=timeout)

    # -- raw access ----------------------------------------------------------------------------------------

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
            ext_name(method)
        return SentRequest(self._hub.rpc_request(method, params, decode, timeout))

    async def notify(self, method: str, params: Any = None) -> None:
        """Send an extension notification (``_``-prefixed)."""
        await self._hub.rpc_notify(ext_name(method), params)

    # -- auth ------------------------------------------------------------------------------------------------

    # -- auth ------------------------------------------------------------------------------------------------

    @property
    def pushes_auth_status(self) -> bool:
        """Whether the agent says it pushes its auth state: ``auth.status`` (Preview), or the extension marker
        ``authStatus`` in ``_meta`` that codex-acp and claude-agent-acp advertise."""
        return pushes_auth_status(self._hub.capability_record)

    @property
    def auth_state(self) -> mu.AuthStatusUpdateNotification | None:
        """The agent's latest auth state (Preview): from its ``auth/status_update`` notifications and
        ``auth_status()`` answers; None until either arrived."""
        return self._hub.auth_state

    async def auth_status(self, *, timeout: float | None = None) -> mu.AuthStatusResponse:
        """``auth/status`` (Preview, ``auth.status``): whether the user is logged in, with their accounts; the
        answer also becomes ``auth_state``."""
        self.require("auth/status")
        response = await self._hub.call("auth/status", mu.AuthStatusRequest(), _AUTH_STATUS, timeout)
        self._hub.auth_state = mu.AuthStatusUpdateNotification(
            state=response.state, accounts=response.accounts, meta=response.meta
        )
        return response

    # -- providers (Preview, ``providers``) ---------------------------------------------------------------

    async def list_providers(self, *, timeout: float | None = None) -> list[mu.ProviderInfo]:
        """``providers/list``: the model providers the agent can be pointed at, with their current settings."""
        self.require("providers/list")
        response = await self._hub.call("providers/list", mu.ListProvidersRequest(), _PROVIDERS, timeout)
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
        await self._hub.call("providers/set", params, decoder(mu.SetProviderResponse), timeout)

    async def disable_provider(self, provider_id: str, *, timeout: float | None = None) -> None:
        """``providers/disable``: stop using a provider that is not required."""
        self.require("providers/disable")
        params = mu.DisableProviderRequest(provider_id=provider_id)
        await self._hub.call("providers/disable", params, decoder(mu.DisableProviderResponse), timeout)

    @property
    def login_methods(self) -> list[LoginMethod]:
        """The agent's auth methods as ``LoginMethod`` values: every shape of both versions (``agent``,
        ``terminal``, codex-acp's ``env_var``, ``_meta`` terminal commands), unknown ones kept."""
        return self._hub.login_methods

    async def authenticate(self, method_id: str, *, timeout: float | None = None) -> LoginAuthResponse:
        """Log in with an advertised protocol-driven method: v2 ``auth/login``, v1 ``authenticate``
        (ACP2-029, ACP2-061). A terminal method is never sent (ACP1-014): run
        ``LoginMethod.terminal_command(...)`` in a terminal instead. ``timeout`` (seconds; None: none) ends the
        wait with ``RequestTimeout``, the request withdrawn (a login may wait on the user, in a browser)."""
        methods = self.login_methods
        if not methods:
            raise CapabilityNotSupported("auth/login", "authMethods")
        method = next((m for m in methods if m.method_id == method_id), None)
        if method is None:
            raise ValueError(f"auth method {method_id!r} was not advertised")
        agent_shape = isinstance(method.raw, AuthMethodAgent)
        if not agent_shape and not (self.protocol_version == 1 and method.is_protocol_login):
            raise CapabilityNotSupported("auth/login", f"a protocol-driven login flow for {method_id!r}")
        request = LoginAuthRequest(method_id=method_id)
        return await self._hub.call("auth/login", request, decoder(LoginAuthResponse), timeout)

    login = authenticate

    async def logout(self) -> LogoutAuthResponse:
        """``auth/logout``; only when the agent advertised auth methods (ACP2-062)."""
        if not self.auth_methods:
            raise CapabilityNotSupported("auth/logout", "authMethods")
        return await self._hub.call("auth/logout", LogoutAuthRequest(), decoder(LogoutAuthResponse))

    # -- sessions ----------------------------------------------------------------------------------------------

    # -- sessions ----------------------------------------------------------------------------------------------

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
        session, _ = await open_new_session(
            self._hub,
            cwd,
            mcp_servers,
            additional_directories,
            system_prompt=system_prompt,
            system_prompt_mode=system_prompt_mode,
            timeout=timeout,
        )
        return session

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
        session, _ = await open_forked_session(
            self._hub,
            session_id,
            cwd,
            mcp_servers,
            additional_directories,
            system_prompt=system_prompt,
            system_prompt_mode=system_prompt_mode,
            timeout=timeout,
        )
        return session

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
        session, _ = await open_resumed_session(
            self._hub,
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

    @property
    def tools_over_mcp_transport(self) -> str | None:
        """How each session of this connection gets the client's file system and terminals as an MCP server:
        ``"acp"`` (MCP-over-ACP), ``"stdio"`` (the relay), or None (protocol version 1, which calls the providers
        directly; no provider; ``tools_over_mcp(False)``; or an agent that takes neither transport)."""
        return tools_over_mcp_transport(self._hub)

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
        if not _conversation_opener:
            raise RuntimeError("the conversation layer is not installed (import acp_session first)")
        conversation: Conversation = await _conversation_opener[0](
            self,
            cwd,
            mcp_servers=mcp_servers,
            additional_directories=additional_directories,
            max_history_size=max_history_size,
            system_prompt=system_prompt,
            system_prompt_mode=system_prompt_mode,
        )
        return conversation

    async def list_sessions(
        self, cwd: str | os.PathLike[str] | None = None, *, timeout: float | None = None
    ) -> AsyncIterator[SessionInfo]:
        """Every session the agent lists, across all pages (a missing ``nextCursor`` ends the listing);
        ``timeout`` limits each page's request."""
        self._hub.session_caps("session/list")
        if not self.supports("session/list"):
            raise CapabilityNotSupported("session/list", "sessionCapabilities.list")
        filter_cwd: Any = msgspec.UNSET if cwd is None else absolute(cwd, "cwd")
        cursor: Any = msgspec.UNSET
        seen: set[str] = set()
        while True:
            page = await self._hub.call(
                "session/list", ListSessionsRequest(cwd=filter_cwd, cursor=cursor), _LIST, timeout
            )
            for info in page.sessions:
                yield info
            if not isinstance(page.next_cursor, str) or page.next_cursor in seen:
                return
            seen.add(page.next_cursor)
            cursor = page.next_cursor

    async def delete_session(self, session_id: str, *, timeout: float | None = None) -> None:
        """``session/delete``; deleting an unknown session (-32002) counts as done."""
        caps = self._hub.session_caps("session/delete")
        if caps.delete in (None, msgspec.UNSET):
            raise CapabilityNotSupported("session/delete", "session.delete")
        with suppress(ResourceNotFound):
            await self._hub.call(
                "session/delete", DeleteSessionRequest(session_id=session_id), decoder(DeleteSessionResponse), timeout
            )
        self._hub.session_tracks.pop(session_id, None)

    def session(self, session_id: str) -> ActiveSession:
        """A handle for a session this connection already has (e.g. from ``new_session``)."""
        self._hub.session_track(session_id)
        return ActiveSession(self._hub, session_id)


def hub_of(connection: ClientConnection) -> ConnectionHub:
    """The connection's hub: for the package's own layers (the builder, the conversation layer), never users."""
    return connection._hub


if TYPE_CHECKING:

    def _is_session_link(hub: ConnectionHub) -> SessionLink:
        return hub  # checked by mypy: the hub implements SessionLink

    def _is_client_side(hub: ConnectionHub) -> ClientSide:
        return hub  # checked by mypy: the hub implements ClientSide
