"""MCP servers for sessions: typed configs and their capability check (``servers``), the ``.mcp.json`` reader
(``config``), and the client's own file system and terminals offered to v2 agents as an MCP server
(``tools``, ``over_acp``, ``relay``; those need the optional ``mcp`` extra)."""

from typing import TYPE_CHECKING, Any

from .servers import (
    McpServerAcp,
    McpServerConfig,
    McpServerHttp,
    McpServerStdio,
    McpTransportNotSupported,
    UnsafeMcpServer,
    acp_server,
    check_server,
    check_transports,
    http_server,
    resolve_command,
    sse_server,
    stdio_server,
    transport_of,
)

__all__ = [
    "McpServerAcp",
    "McpServerConfig",
    "McpServerHttp",
    "McpServerSse",
    "McpServerStdio",
    "McpTransportNotSupported",
    "UnsafeMcpServer",
    "acp_server",
    "check_server",
    "check_transports",
    "http_server",
    "resolve_command",
    "sse_server",
    "stdio_server",
    "transport_of",
]

if TYPE_CHECKING:
    from .servers import McpServerSse


def __getattr__(name: str) -> Any:
    """``McpServerSse`` (a v1 type) imported on first use, so that start-up loads no v1 module."""
    if name == "McpServerSse":
        from . import servers

        return servers.McpServerSse
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
