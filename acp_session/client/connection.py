"""``ClientConnection``: an initialized connection to an agent, the commands a user calls.

What its sessions and the protocol adapter call lives in the connection's hub (``_hub.ConnectionHub``), and
sessions are opened by ``opening``; this class only delegates, so its members are the public API.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Sequence
from contextlib import suppress
from typing import TYPE_CHECKING, Any, Literal

import msgspec
from anyio.abc import TaskGroup

from .._opener import conversation_opener
from ..client_errors import CapabilityNotSupported
from ..codec import decoder
from ..errors import ConnectionClosed, ResourceNotFound
from ..interactions import InteractionRegistry
from ..mcp.servers import McpServerConfig
from ..protocol.base import ProtocolAdapter
from ..protocol.capabilities import PREVIEW_METHODS
from ..protocol.routes import ClientOffer
from ..rpc import Connection, json_decode
from ..schema import unstable as mu
from ..schema.types import (
    AGENT_METHODS,
    DeleteSessionRequest,
    DeleteSessionResponse,
    InitializeResponse,
    ListSessionsRequest,
    ListSessionsResponse,
    ReplayFrom,
    SessionInfo,
)
from ..session import SentRequest
from ._hub import ConnectionHub
from .active_session import ActiveSession
from .agent_view import AgentView
from .authentication import Authentication
from .client_tools import ClientTools
from .model_providers import ModelProviders
from .opening import SystemPromptInput, absolute, open_forked_session, open_new_session, open_resumed_session
from .reconnection import Reconnection

if TYPE_CHECKING:
    from ..conversation.conversation import Conversation
    from ..protocol.base import ClientSide
    from ..session import Limits
    from .active_session import SessionLink
    from .builder import ClientBuilder

__all__ = ["PROTOCOL_VERSION", "ClientConnection", "SystemPromptInput", "hub_of"]

PROTOCOL_VERSION = 2
"""The newest protocol version this library speaks (and offers first); version 1 is spoken too."""
_LIST = decoder(ListSessionsResponse)
_DELETE = decoder(DeleteSessionResponse)


def ext_name(method: str) -> str:
    """``method`` if it is an extension method name (``_``-prefixed), else ValueError."""
    if not method.startswith("_"):
        raise ValueError(f"extension methods must start with '_' (got {method!r})")
    return method


class ClientConnection:
    """An initialized connection to an agent: session lifecycle and extension calls, with each other concern
    behind one attribute (``agent``, ``auth``, ``providers``, ``reconnection``, ``tools``).

    Whatever protocol version was agreed, everything here speaks the model (the v2 types); the
    ``protocol`` adapter maps it to the agent's wire. Made by ``ClientBuilder.connect`` / ``spawn``.
    """

    def __init__(self, rpc: Connection, builder: ClientBuilder, tg: TaskGroup) -> None:
        self._builder = builder
        self._hub = hub = ConnectionHub(self, rpc, builder, tg)
        self._agent = AgentView(hub)
        self._auth = Authentication(hub)
        self._providers = ModelProviders(hub)
        self._reconnection = Reconnection(hub)
        self._tools = ClientTools(hub)

    # -- what it is made of -------------------------------------------------------------------------------

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

    # -- each concern behind one attribute ------------------------------------------------------------------

    @property
    def agent(self) -> AgentView:
        """What the agent said at ``initialize``: ``info``, ``capabilities``, ``capability_record``,
        ``supports(method)``, ``require(method)``, ... (``acp_session.client.agent_view``)."""
        return self._agent

    @property
    def auth(self) -> Authentication:
        """Logging in and out, and the agent's auth state (``acp_session.client.authentication``)."""
        return self._auth

    @property
    def providers(self) -> ModelProviders:
        """The agent's model providers, Preview ``providers/*`` (``acp_session.client.model_providers``)."""
        return self._providers

    @property
    def reconnection(self) -> Reconnection:
        """The reconnect policy in force, its count and events (``acp_session.client.reconnection``)."""
        return self._reconnection

    @property
    def tools(self) -> ClientTools:
        """The client's file system and terminals the agent calls, and how (``acp_session.client.client_tools``)."""
        return self._tools

    @property
    def offer(self) -> ClientOffer:
        """What this connection offers the agent (``ClientBuilder.offer()`` when it was made): which of the
        protocol adapter's incoming routes are registered."""
        return self._hub.offer

    # -- lifetime --------------------------------------------------------------------------------------------

    async def wait_closed(self) -> ConnectionClosed:
        """Wait until this connection is closed for good and return why: its transport's end, or with a reconnect
        policy, a local close or ``ReconnectFailed`` (a drop it recovers from does not count)."""
        reconnector = self._hub.reconnector
        if reconnector is None:
            return await self._hub.rpc.wait_closed()
        await reconnector.finished.wait()
        return reconnector.failure or await self._hub.rpc.wait_closed()

    async def initialize(self, *, timeout: float | None = None) -> InitializeResponse:
        """Repeat ``initialize`` (allowed only before any other request). A failed repeat keeps the previous one.
        ``timeout`` ends the wait with ``InitializeTimeout``."""
        return await self._hub.initialize(timeout=timeout)

    # -- raw access ----------------------------------------------------------------------------------------

    def request(self, method: str, params: Any = None, *, timeout: float | None = None) -> SentRequest[Any]:
        """Send an extension request (``_``-prefixed) or a schema method by name; the result is plain JSON
        for extensions and the generated type for schema methods. A method of the unstable schema only
        (``session/fork``, ``auth/status``, ...) is sent when the agent advertised it (``agent.supports``), else
        ``CapabilityNotSupported``. ``timeout``: see ``SentRequest``."""
        if method == "initialize":
            raise ValueError("use ClientConnection.initialize()")
        spec = AGENT_METHODS.get(method)
        if spec is None and method in PREVIEW_METHODS:
            self._hub.require(method)  # an unstable method only when the agent advertised it
            spec = mu.AGENT_METHODS[method]
        decode = json_decode if spec is None else decoder(spec.result)
        if spec is None:
            ext_name(method)
        return SentRequest(self._hub.rpc_request(method, params, decode, timeout))

    async def notify(self, method: str, params: Any = None) -> None:
        """Send an extension notification (``_``-prefixed)."""
        await self._hub.rpc_notify(ext_name(method), params)

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
        opener = conversation_opener()
        if opener is None:
            raise RuntimeError("the conversation layer is not installed (import acp_session first)")
        conversation: Conversation = await opener(
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
        if not self._hub.supports("session/list"):
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
