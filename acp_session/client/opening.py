"""Opening a session (internal to the package): ``session/new`` and ``session/resume`` with a listener on the
session before its first update, and the client's own tools offered as a built-in MCP server.

``ClientConnection.new_session`` / ``resume_session`` and the conversation layer (``Conversation.open``,
``resume``, ``reconnect``) open sessions through these functions, so the conversation layer builds on the client
and the client never imports it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

import msgspec

from ..client_errors import CapabilityNotSupported
from ..codec import decoder
from ..mcp.servers import McpServerConfig, check_transports
from ..schema.types import (
    NewSessionRequest,
    NewSessionResponse,
    ReplayFrom,
    ReplayFromStart,
    ResumeSessionRequest,
    ResumeSessionResponse,
)
from ..session import (
    UpdateListener,
)
from .active_session import ActiveSession

if TYPE_CHECKING:
    pass
from functools import partial

from ._hub import ConnectionHub

__all__ = ["open_new_session", "open_resumed_session", "tools_over_mcp_transport"]

_log = logging.getLogger("acp_session.client")
_NEW = decoder(NewSessionResponse)
_RESUME = decoder(ResumeSessionResponse)


def _no_bind(session_id: str | None, cwd: str, dirs: list[str]) -> None:
    """``_with_builtin_tools``'s bind when no built-in MCP server was added."""


def absolute(path: str | os.PathLike[str], what: str) -> str:
    """``path`` as text if it is absolute, else ValueError (ACP paths are absolute)."""
    text = os.fspath(path)
    if not os.path.isabs(text):
        raise ValueError(f"{what} must be an absolute path (got {text!r})")
    return text


def _roots(
    hub: ConnectionHub,
    method: str,
    cwd: str | os.PathLike[str],
    mcp_servers: Sequence[McpServerConfig],
    additional_directories: Sequence[str | os.PathLike[str]],
) -> tuple[str, Any, Any]:
    caps = hub.session_caps(method)
    cwd_text = absolute(cwd, "cwd")
    dirs = [absolute(d, "additional directory") for d in additional_directories]
    if dirs and caps.additional_directories in (None, msgspec.UNSET):
        raise CapabilityNotSupported(method, "session.additionalDirectories")
    protocol = hub.protocol
    check_transports(method, mcp_servers, protocol.mcp_transports, protocol.version)
    return cwd_text, dirs or msgspec.UNSET, list(mcp_servers) or msgspec.UNSET


async def open_new_session(
    hub: ConnectionHub,
    cwd: str | os.PathLike[str],
    mcp_servers: Sequence[McpServerConfig],
    additional_directories: Sequence[str | os.PathLike[str]],
    listener: UpdateListener | None = None,
    *,
    timeout: float | None = None,
) -> tuple[ActiveSession, NewSessionResponse]:
    """``new_session`` returning the agent's response too, with ``listener`` on the session before its first
    update is delivered (``Conversation.open``'s entry point; internal)."""
    cwd_text, dirs, servers = _roots(hub, "session/new", cwd, mcp_servers, additional_directories)
    servers, bind = await _with_builtin_tools(hub, servers)
    params = NewSessionRequest(cwd=cwd_text, additional_directories=dirs, mcp_servers=servers)
    hub.opening += 1
    try:
        response = await hub.call_auth("session/new", params, _NEW, timeout)
    except BaseException:
        bind(None, "", [])
        raise
    finally:
        hub.opening -= 1
    bind(response.session_id, cwd_text, dirs or [])
    if not hub.opening:
        hub.drop_provisional(keep=response.session_id)
    track = hub.session_track(response.session_id)
    if listener is not None:
        track.listen(listener)
    track.early = None
    if isinstance(response.config_options, list) and not track.config_options:
        track.config_options = list(response.config_options)  # an earlier config_option_update is newer
    hub.protocol.session_opened(response.session_id, cwd_text, dirs or [])
    return ActiveSession(hub, response.session_id), response


async def open_resumed_session(
    hub: ConnectionHub,
    session_id: str,
    cwd: str | os.PathLike[str],
    replay_from: ReplayFrom | Literal["start"] | None,
    mcp_servers: Sequence[McpServerConfig],
    additional_directories: Sequence[str | os.PathLike[str]],
    listener: UpdateListener | None = None,
    *,
    timeout: float | None = None,
) -> tuple[ActiveSession, ResumeSessionResponse]:
    """``resume_session`` returning the agent's response too, with ``listener`` on the session before the
    replay starts (``Conversation.resume`` and ``reconnect``'s entry point; internal)."""
    cwd_text, dirs, servers = _roots(hub, "session/resume", cwd, mcp_servers, additional_directories)
    servers, bind = await _with_builtin_tools(hub, servers)
    replay: Any = ReplayFromStart() if replay_from == "start" else msgspec.UNSET if replay_from is None else replay_from
    params = ResumeSessionRequest(
        session_id=session_id, cwd=cwd_text, additional_directories=dirs, mcp_servers=servers, replay_from=replay
    )
    track = hub.session_track(session_id)
    remove = track.listen(listener, take_early=False) if listener is not None else None
    try:
        response = await hub.call_auth("session/resume", params, _RESUME, timeout)
    except BaseException:
        bind(None, "", [])
        if remove is not None:
            remove()
        raise
    bind(session_id, cwd_text, dirs or [])
    track.closed = False
    if isinstance(response.config_options, list):
        track.config_options = list(response.config_options)
    hub.protocol.session_opened(session_id, cwd_text, dirs or [])
    await hub.updates_drained()
    return ActiveSession(hub, session_id), response


async def _with_builtin_tools(
    hub: ConnectionHub, servers: Any
) -> tuple[Any, Callable[[str | None, str, list[str]], None]]:
    """On a v2 connection with a file-system or terminal provider: ``servers`` plus this session's built-in
    MCP server (``acp_session.mcp.host``), and ``bind(session_id, cwd, dirs)`` to call once the agent
    answered (``None``: it refused, the server goes away). Otherwise ``servers`` unchanged and a no-op."""
    if not tools_offered(hub):
        return servers, _no_bind
    if hub.builtin is None:
        from ..mcp.host import BuiltinServers

        hub.builtin = BuiltinServers(
            hub.protocol.mcp_transports, hub.file_system, hub.terminals, hub.file_written, hub.start_soon
        )
        if hub.builtin.mode == "acp":  # the agent reaches each session's server with mcp/message requests
            from ..schema.unstable import MessageMcpRequest

            hub.rpc.on_request("mcp/message", hub.builtin.on_message, decoder(MessageMcpRequest))
        hooks = getattr(hub.protocol, "session_close_hooks", None)
        if isinstance(hooks, list):
            hooks.append(partial(_builtin_session_closed, hub))
    if hub.builtin.mode is None:
        _log.warning("the agent takes neither acp nor stdio MCP servers: the client's tools are not offered to it")
        return servers, _no_bind
    listed = servers if isinstance(servers, list) else []
    config, bind_server = await hub.builtin.add({str(getattr(s, "name", "")) for s in listed})
    providers = (hub.file_system, hub.terminals)

    def bind(session_id: str | None, cwd: str, dirs: list[str]) -> None:
        if session_id is not None:
            for provider in providers:
                opened = getattr(provider, "open_session", None)
                if opened is not None:
                    opened(session_id, cwd, dirs)
        bind_server(session_id)

    return [*listed, config], bind


def tools_offered(hub: ConnectionHub) -> bool:
    """Whether the client's providers are offered to the agent as a built-in MCP server."""
    has_provider = hub.file_system is not None or hub.terminals is not None
    return hub.tools_over_mcp and has_provider and hub.protocol.version >= 2


def tools_over_mcp_transport(hub: ConnectionHub) -> str | None:
    """How each session of this connection gets the client's file system and terminals as an MCP server:
    ``"acp"`` (MCP-over-ACP), ``"stdio"`` (the relay), or None (protocol version 1, which calls the providers
    directly; no provider; ``tools_over_mcp(False)``; or an agent that takes neither transport)."""
    if not tools_offered(hub):
        return None
    transports = hub.protocol.mcp_transports
    return "acp" if "acp" in transports else "stdio" if "stdio" in transports else None


def _builtin_session_closed(hub: ConnectionHub, session_id: str) -> None:
    if hub.builtin is not None:
        hub.builtin.session_closed(session_id)
    for provider in (hub.file_system, hub.terminals):
        closed = getattr(provider, "close_session", None)
        if closed is not None:
            hub.run_soon(closed, session_id)
