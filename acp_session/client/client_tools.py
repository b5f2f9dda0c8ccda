"""``ClientConnection.tools``: the client's own file system and terminals, and how the agent reaches them.

A v1 agent calls them through ``fs/*`` and ``terminal/*``; a v2 agent reaches the same providers as an MCP
server (docs/mcp.md). Set on the builder (``with_file_system``, ``with_terminals``, ``tools_over_mcp``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ..protocol.base import ProtocolAdapter

if TYPE_CHECKING:
    from ..providers import FileSystemProvider, TerminalProvider

__all__ = ["ClientTools"]


class ToolsSource(Protocol):
    """What ``ClientTools`` reads (the connection's hub), so this module needs nothing of the hub's."""

    @property
    def file_system(self) -> FileSystemProvider | None: ...
    @property
    def terminals(self) -> TerminalProvider | None: ...
    @property
    def tools_over_mcp(self) -> bool: ...
    @property
    def protocol(self) -> ProtocolAdapter: ...


def tools_offered(hub: ToolsSource) -> bool:
    """Whether the client's providers are offered to the agent as a built-in MCP server."""
    has_provider = hub.file_system is not None or hub.terminals is not None
    return hub.tools_over_mcp and has_provider and hub.protocol.version >= 2


def tools_over_mcp_transport(hub: ToolsSource) -> str | None:
    """How each session of this connection gets the client's file system and terminals as an MCP server:
    ``"acp"`` (MCP-over-ACP), ``"stdio"`` (the relay), or None (protocol version 1, which calls the providers
    directly; no provider; ``tools_over_mcp(False)``; or an agent that takes neither transport)."""
    if not tools_offered(hub):
        return None
    transports = hub.protocol.mcp_transports
    return "acp" if "acp" in transports else "stdio" if "stdio" in transports else None


class ClientTools:
    """The providers this connection answers the agent's tool calls with, and the door they go through."""

    __slots__ = ("_hub",)

    def __init__(self, hub: ToolsSource) -> None:
        self._hub = hub

    @property
    def file_system(self) -> FileSystemProvider | None:
        """The provider answering the agent's file reads and writes, if the builder set one."""
        return self._hub.file_system

    @property
    def terminals(self) -> TerminalProvider | None:
        """The provider answering the agent's terminal calls, if the builder set one."""
        return self._hub.terminals

    @property
    def mcp_transport(self) -> str | None:
        """How each session of this connection gets the client's file system and terminals as an MCP server:
        ``"acp"`` (MCP-over-ACP), ``"stdio"`` (the relay), or None (protocol version 1, which calls the providers
        directly; no provider; ``tools_over_mcp(False)``; or an agent that takes neither transport)."""
        return tools_over_mcp_transport(self._hub)
