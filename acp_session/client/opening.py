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
from ..schema import unstable as mu
from ..schema.types import (
    ContentBlock,
    NewSessionResponse,
    ReplayFrom,
    ReplayFromStart,
    ResumeSessionResponse,
    TextContent,
)
from ..session import (
    UpdateListener,
)
from .active_session import ActiveSession

if TYPE_CHECKING:
    pass
from functools import partial

from ._hub import ConnectionHub
from .client_tools import tools_offered

__all__ = [
    "SystemPromptInput",
    "open_forked_session",
    "open_new_session",
    "open_resumed_session",
]

SystemPromptInput = str | Sequence[ContentBlock] | mu.SystemPrompt
"""A system prompt (Preview): its text, its content blocks, or the wire value with its mode."""

_log = logging.getLogger("acp_session.client")
_NEW = decoder(NewSessionResponse)
_FORK = decoder(mu.ForkSessionResponse)
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


def _system_prompt(hub: ConnectionHub, method: str, system_prompt: SystemPromptInput | None, mode: str) -> Any:
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
    modes = hub.system_prompt_modes
    if value.mode not in modes:
        needed = "session.systemPrompt" if not modes else f"session.systemPrompt.mode.{value.mode}"
        raise CapabilityNotSupported(method, needed)
    return value


def _opening_fields(
    hub: ConnectionHub,
    method: str,
    cwd: str | os.PathLike[str],
    mcp_servers: Sequence[McpServerConfig],
    additional_directories: Sequence[str | os.PathLike[str]],
    system_prompt: SystemPromptInput | None,
    system_prompt_mode: str,
) -> dict[str, Any]:
    """The fields every session lifecycle request (new, resume, fork) shares, each checked against what the
    agent advertised; one more shared field is one more keyword here."""
    cwd_text, dirs, servers = _roots(hub, method, cwd, mcp_servers, additional_directories)
    return {
        "cwd": cwd_text,
        "additional_directories": dirs,
        "mcp_servers": servers,
        "system_prompt": _system_prompt(hub, method, system_prompt, system_prompt_mode),
    }


async def open_new_session(
    hub: ConnectionHub,
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
    fields = _opening_fields(
        hub, "session/new", cwd, mcp_servers, additional_directories, system_prompt, system_prompt_mode
    )
    fields["mcp_servers"], bind = await _with_builtin_tools(hub, fields["mcp_servers"])
    params = mu.NewSessionRequest(**fields)
    response = await _open_session(hub, "session/new", params, _NEW, listener, timeout, bind)
    return ActiveSession(hub, response.session_id), response


async def open_forked_session(
    hub: ConnectionHub,
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
    hub.require("session/fork")
    fields = _opening_fields(
        hub, "session/fork", cwd, mcp_servers, additional_directories, system_prompt, system_prompt_mode
    )
    fields["mcp_servers"], bind = await _with_builtin_tools(hub, fields["mcp_servers"])
    params = mu.ForkSessionRequest(session_id=session_id, **fields)
    response = await _open_session(hub, "session/fork", params, _FORK, listener, timeout, bind)
    return ActiveSession(hub, response.session_id), response


async def _open_session(
    hub: ConnectionHub,
    method: str,
    params: Any,
    decode: Callable[[bytes], Any],
    listener: UpdateListener | None,
    timeout: float | None,
    bind: Callable[[str | None, str, list[str]], None],
) -> Any:
    """Send a request that creates a session (new, fork) and track the session it names; updates of unknown
    sessions that arrive while it is in flight are kept for it. ``bind``: see ``_with_builtin_tools``."""
    hub.opening += 1
    try:
        response = await hub.call_auth(method, params, decode, timeout)
    except BaseException:
        bind(None, "", [])
        raise
    finally:
        hub.opening -= 1
    dirs = params.additional_directories or []
    bind(response.session_id, params.cwd, dirs)
    if not hub.opening:
        hub.drop_provisional(keep=response.session_id)
    track = hub.session_track(response.session_id)
    track.lost = None  # a new session: an agent restarted since may reuse a lost session's id
    if listener is not None:
        track.listen(listener)
    track.early = None
    if isinstance(response.config_options, list) and not track.config_options:
        track.config_options = list(response.config_options)  # an earlier config_option_update is newer
    hub.protocol.session_opened(response.session_id, params.cwd, dirs)
    hub.session_cwds[response.session_id] = params.cwd
    return response


async def open_resumed_session(
    hub: ConnectionHub,
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
    fields = _opening_fields(
        hub, "session/resume", cwd, mcp_servers, additional_directories, system_prompt, system_prompt_mode
    )
    fields["mcp_servers"], bind = await _with_builtin_tools(hub, fields["mcp_servers"])
    replay: Any = ReplayFromStart() if replay_from == "start" else msgspec.UNSET if replay_from is None else replay_from
    params = mu.ResumeSessionRequest(session_id=session_id, replay_from=replay, **fields)
    track = hub.session_track(session_id)
    remove = track.listen(listener, take_early=False) if listener is not None else None
    try:
        response = await hub.call_auth("session/resume", params, _RESUME, timeout)
    except BaseException:
        bind(None, "", [])
        if remove is not None:
            remove()
        raise
    dirs = params.additional_directories or []
    bind(session_id, params.cwd, dirs)
    track.closed = False
    track.lost = None  # the agent has it (again)
    if isinstance(response.config_options, list):
        track.config_options = list(response.config_options)
    hub.protocol.session_opened(session_id, params.cwd, dirs)
    hub.session_cwds[session_id] = params.cwd
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


def _builtin_session_closed(hub: ConnectionHub, session_id: str) -> None:
    if hub.builtin is not None:
        hub.builtin.session_closed(session_id)
    for provider in (hub.file_system, hub.terminals):
        closed = getattr(provider, "close_session", None)
        if closed is not None:
            hub.run_soon(closed, session_id)
