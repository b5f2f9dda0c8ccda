"""Typed MCP server configs for a session, and the check of each against the agent's advertised transports.

The configs are the schema's own types: ``McpServerStdio`` / ``McpServerHttp`` (both versions),
``McpServerAcp`` (MCP-over-ACP, unstable in both) and v1's ``McpServerSse``. The adapters put them in each
version's wire shape; this module only builds them and says, before anything is sent, when the agent did not
advertise a server's transport: a server dropped or refused by the agent is the failure users report most.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from ..client_errors import CapabilityNotSupported
from ..schema.types import EnvVariable, HttpHeader, McpServer, McpServerHttp, McpServerStdio
from ..schema.unstable import McpServerAcp

if TYPE_CHECKING:  # v1's types load only when a v1 agent answers, or sse_server is called (tests/test_lazy_v1.py)
    from ..schema.v1.types import McpServerSse

_V1_TYPES = "acp_session.schema.v1.types"

__all__ = [
    "McpServerAcp",
    "McpServerConfig",
    "McpServerHttp",
    "McpServerSse",
    "McpServerStdio",
    "McpTransportNotSupported",
    "UnsafeMcpServer",
    "acp_server",
    "capability_for",
    "check_server",
    "check_transports",
    "http_server",
    "resolve_command",
    "sse_server",
    "stdio_server",
    "transport_of",
]

McpServerConfig: TypeAlias = "McpServer | McpServerSse | McpServerAcp"
"""One MCP server for ``new_session`` / ``resume_session`` / ``Conversation`` (``mcp_servers=``)."""


class McpTransportNotSupported(CapabilityNotSupported):
    """A session's MCP server uses a transport the agent did not advertise; nothing was sent."""

    def __init__(self, method: str, capability: str, server: str, transport: str) -> None:
        self.server = server
        self.transport = transport
        super().__init__(method, capability)
        self.args = (f"{method}: MCP server {server!r} uses {transport}, and the agent did not advertise {capability}",)


class UnsafeMcpServer(ValueError):
    """An MCP server config that must not reach the agent: a NUL or another control character in its name,
    command, an argument, an environment variable or header name, or ``=`` in a variable's name. The agent
    would run or send it as given (a NUL cuts a command short; a newline in a header adds another)."""

    def __init__(self, server: str, problem: str) -> None:
        self.server = server
        self.problem = problem
        super().__init__(f"MCP server {server!r}: {problem}")


_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_CONTROLS_BUT_LINES = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""Arguments and variable values may hold tabs and newlines (a ``-c`` script, a key); nothing else."""


def _refuse(server: str, what: str, value: str, controls: re.Pattern[str] = _CONTROLS) -> None:
    found = controls.search(value)
    if found is not None:
        raise UnsafeMcpServer(server, f"{what} holds the control character U+{ord(found.group()):04X}")


def check_server(server: Any) -> None:
    """Raise ``UnsafeMcpServer`` for a config holding what no agent should be given (see there)."""
    name = getattr(server, "name", None)
    if not isinstance(name, str):
        return  # a server type this library does not know: passed on as it is
    _refuse(name, "the name", name)
    if isinstance(server, McpServerStdio):
        _refuse(name, "the command", server.command)
        for index, arg in enumerate(server.args if isinstance(server.args, list) else ()):
            _refuse(name, f"argument {index + 1}", arg, _CONTROLS_BUT_LINES)
        for variable in server.env if isinstance(server.env, list) else ():
            _refuse(name, f"the environment variable name {variable.name!r}", variable.name)
            if not variable.name or "=" in variable.name:
                raise UnsafeMcpServer(name, f"{variable.name!r} is not an environment variable name")
            _refuse(name, f"the value of {variable.name}", variable.value, _CONTROLS_BUT_LINES)
        return
    url = getattr(server, "url", None)
    if isinstance(url, str):
        _refuse(name, "the url", url)
    for header in getattr(server, "headers", None) or ():
        _refuse(name, f"the header name {header.name!r}", header.name)
        _refuse(name, f"the header {header.name}", header.value)


def resolve_command(command: str) -> str:
    """``command`` as an absolute path (v2 requires one): a bare name (``npx``, ``uvx``) is looked up on PATH."""
    if os.path.isabs(command):
        return command
    if os.sep in command:
        return os.path.abspath(command)
    found = shutil.which(command)
    if found is None:
        raise ValueError(f"MCP server command {command!r} is not an absolute path and was not found on PATH")
    return os.path.abspath(found)


def stdio_server(
    name: str, command: str, args: Sequence[str] = (), env: Mapping[str, str] | None = None
) -> McpServerStdio:
    """A stdio MCP server the agent starts; ``command`` given by name is resolved on PATH. ``UnsafeMcpServer``
    for a control character in it (``check_server``)."""
    _refuse(name, "the command", command)
    server = McpServerStdio(
        name=name,
        command=resolve_command(command),
        args=list(args),
        env=[EnvVariable(name=k, value=v) for k, v in (env or {}).items()],
    )
    check_server(server)
    return server


def http_server(name: str, url: str, headers: Mapping[str, str] | None = None) -> McpServerHttp:
    """A streamable-HTTP MCP server the agent connects to (needs the agent's ``http`` MCP capability)."""
    pairs = [HttpHeader(name=k, value=v) for k, v in (headers or {}).items()]
    server = McpServerHttp(name=name, url=url, headers=pairs)
    check_server(server)
    return server


def sse_server(name: str, url: str, headers: Mapping[str, str] | None = None) -> McpServerSse:
    """An SSE MCP server: protocol version 1 only, for agents advertising ``mcpCapabilities.sse``."""
    from ..schema.v1.types import HttpHeader as V1HttpHeader
    from ..schema.v1.types import McpServerSse

    pairs = [V1HttpHeader(name=k, value=v) for k, v in (headers or {}).items()]
    server = McpServerSse(name=name, url=url, headers=pairs)
    check_server(server)
    return server


def acp_server(name: str, server_id: str) -> McpServerAcp:
    """An MCP server this client serves over the ACP connection itself (``mcp/message``; unstable)."""
    return McpServerAcp(name=name, server_id=server_id)


def transport_of(server: Any) -> str:
    """``stdio``, ``http``, ``sse``, ``acp``, or the ``type`` of a server this library does not know."""
    if isinstance(server, McpServerStdio):
        return "stdio"
    if isinstance(server, McpServerHttp):
        return "http"
    v1 = sys.modules.get(_V1_TYPES)  # no v1 type loaded: no McpServerSse can exist
    if v1 is not None and isinstance(server, v1.McpServerSse):
        return "sse"
    if isinstance(server, McpServerAcp):
        return "acp"
    kind = getattr(server, "type", None)
    if kind is None and isinstance(getattr(server, "raw", None), dict):
        kind = server.raw.get("type")
    return kind if isinstance(kind, str) else type(server).__name__


def capability_for(transport: str, version: int) -> str:
    """The capability an agent advertises for ``transport`` in protocol ``version``."""
    return f"session.mcp.{transport}" if version >= 2 else f"agentCapabilities.mcpCapabilities.{transport}"


def check_transports(method: str, servers: Iterable[Any], offered: frozenset[str], version: int) -> None:
    """Raise ``McpTransportNotSupported`` for the first server whose transport the agent did not advertise,
    ``ValueError`` for a name given twice (agents refuse duplicates with -32602; the official SDKs do) and
    ``UnsafeMcpServer`` for a config built by hand that holds a control character (``check_server``)."""
    names: set[str] = set()
    for server in servers:
        check_server(server)
        name = getattr(server, "name", None)
        if isinstance(name, str):
            if name in names:
                raise ValueError(f"{method}: two MCP servers are named {name!r}")
            names.add(name)
        kind = transport_of(server)
        if kind in offered:
            continue
        raise McpTransportNotSupported(method, capability_for(kind, version), str(getattr(server, "name", "?")), kind)


def __getattr__(name: str) -> Any:
    """``McpServerSse`` (a v1 type) imported on first use, so that start-up loads no v1 module."""
    if name == "McpServerSse":
        from ..schema.v1.types import McpServerSse

        return McpServerSse
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
