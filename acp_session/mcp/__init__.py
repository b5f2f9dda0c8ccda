"""MCP servers for sessions: typed configs and their capability check (``servers``), the ``.mcp.json`` reader
(``config``), and the client's own file system and terminals offered to v2 agents as an MCP server
(``tools``, ``over_acp``, ``relay``; those need the optional ``mcp`` extra)."""

from .servers import (
    McpServerAcp,
    McpServerConfig,
    McpServerHttp,
    McpServerSse,
    McpServerStdio,
    McpTransportNotSupported,
    acp_server,
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
    "acp_server",
    "check_transports",
    "http_server",
    "resolve_command",
    "sse_server",
    "stdio_server",
    "transport_of",
]
