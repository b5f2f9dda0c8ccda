"""Serving the built-in MCP server (``tools``) to a v2 agent, one server per session.

Over MCP-over-ACP when the agent advertises ``session.mcp.acp``: the session gets an ``acp`` server with a
``serverId``, and each ``mcp/message`` request the agent sends on the ACP connection is served in-process
through the SDK's per-request path (no process, no port). Otherwise, when it takes ``stdio`` servers, the
session gets a stdio server whose command is ``relay`` (``python -m acp_session.mcp.relay``): the agent starts
it, it connects back to a Unix socket this connection listens on, and the same in-process server answers, so the
providers, their confinement and the file listeners stay in this process. Either ends with the session or the
connection.
"""

from __future__ import annotations

import logging
import os
import secrets
import sys
import tempfile
from collections.abc import Callable, Collection
from contextlib import AsyncExitStack, suppress
from dataclasses import dataclass, field
from typing import Any

import anyio

from ..errors import InvalidParams
from ..providers import FileSystemProvider, TerminalProvider
from ..schema.unstable import MessageMcpRequest
from .servers import McpServerConfig, acp_server, stdio_server
from .tools import SERVER_NAME, ToolsBinding, build_tools_server, require_mcp

__all__ = ["BuiltinServers"]

_log = logging.getLogger("acp_session.mcp")


@dataclass(eq=False)
class _Served:
    """One session's built-in server: the SDK server, its in-process dispatcher pair, its session binding."""

    server_id: str
    server: Any
    session_ready: anyio.Event = field(default_factory=anyio.Event)
    session_id: str | None = None
    caller: Any = None  # the DirectDispatcher side this module sends each inner request through
    scope: anyio.CancelScope | None = None
    ready: anyio.Event = field(default_factory=anyio.Event)
    relays: list[anyio.CancelScope] = field(default_factory=list)  # its stdio relay connections

    async def wait_session(self) -> str:
        await self.session_ready.wait()
        if self.session_id is None:
            raise InvalidParams(message="the session of this MCP server was not opened")
        return self.session_id


class BuiltinServers:
    """The built-in MCP servers of one v2 connection (``ClientConnection`` makes one when it has providers)."""

    def __init__(
        self,
        transports: frozenset[str],
        file_system: FileSystemProvider | None,
        terminals: TerminalProvider | None,
        file_written: Callable[[str, str, str], None],
        start_soon: Callable[..., Any],
    ) -> None:
        require_mcp()
        self.mode = "acp" if "acp" in transports else "stdio" if "stdio" in transports else None
        self._file_system = file_system
        self._terminals = terminals
        self._file_written = file_written
        self._start_soon = start_soon
        self._served: dict[str, _Served] = {}
        self._by_token: dict[str, _Served] = {}
        self._socket_dir: str | None = None
        self._listening: anyio.Event | None = None

    # -- sessions ------------------------------------------------------------------------------------------

    async def add(self, taken: Collection[str] = ()) -> tuple[McpServerConfig, Callable[[str | None], None]]:
        """A new server for a session being opened: its config for ``mcpServers`` (named ``acp-session``, or
        ``acp-session-2``... when the application's servers use that name: ``taken``) and ``bind(session_id)``
        (``None``: the session did not open, the server goes away)."""
        name = SERVER_NAME
        counter = 1
        while name in taken:
            counter += 1
            name = f"{SERVER_NAME}-{counter}"
        if self.mode is None:
            raise RuntimeError("the agent takes neither acp nor stdio MCP servers")
        server_id = f"{SERVER_NAME}-{secrets.token_hex(8)}"
        served = _Served(server_id, None)
        binding = ToolsBinding(self._file_system, self._terminals, served.wait_session, self._file_written)
        served.server = build_tools_server(binding)
        self._served[server_id] = served
        config: McpServerConfig
        if self.mode == "acp":
            self._start_soon(self._run, served)
            await served.ready.wait()
            config = acp_server(name, server_id)
        else:
            token = secrets.token_hex(16)
            self._by_token[token] = served
            socket_path = await self._listen()
            config = stdio_server(name, sys.executable, ["-m", "acp_session.mcp.relay", socket_path, token])

        def bind(session_id: str | None) -> None:
            served.session_id = session_id
            served.session_ready.set()
            if session_id is None:
                self._drop(served)

        return config, bind

    def session_closed(self, session_id: str) -> None:
        for served in [s for s in self._served.values() if s.session_id == session_id]:
            self._drop(served)

    def _drop(self, served: _Served) -> None:
        self._served.pop(served.server_id, None)
        for token in [t for t, s in self._by_token.items() if s is served]:
            del self._by_token[token]
        if served.scope is not None:
            served.scope.cancel()
        for scope in served.relays:
            scope.cancel()

    # -- the in-process server -----------------------------------------------------------------------------

    async def _run(self, served: _Served) -> None:
        from mcp.server.runner import modern_on_request
        from mcp.shared.direct_dispatcher import create_direct_dispatcher_pair

        lowlevel = served.server._lowlevel_server

        async def no_notifications(*_: Any) -> None:
            return None

        async def no_requests(*_: Any) -> dict[str, Any]:
            raise InvalidParams(message="the built-in MCP server sends no requests")

        try:
            with anyio.CancelScope() as scope:
                served.scope = scope
                async with AsyncExitStack() as stack:
                    state = await stack.enter_async_context(lowlevel.lifespan(lowlevel))
                    caller, callee = create_direct_dispatcher_pair(raise_handler_exceptions=False)
                    async with anyio.create_task_group() as tg:
                        await tg.start(callee.run, modern_on_request(lowlevel, state), no_notifications)
                        await tg.start(caller.run, no_requests, no_notifications)
                        served.caller = caller
                        served.ready.set()
                        await anyio.sleep_forever()
        except Exception:
            _log.exception("the built-in MCP server %s failed", served.server_id)
        finally:
            served.ready.set()
            served.session_ready.set()

    # -- MCP-over-ACP --------------------------------------------------------------------------------------

    async def on_message(self, request: MessageMcpRequest) -> dict[str, Any]:
        """An ``mcp/message`` request: the inner MCP outcome as ``{"result": ...}`` or ``{"error": ...}``."""
        from mcp.shared.exceptions import MCPError

        served = self._served.get(request.server_id)
        if served is None or served.caller is None:
            raise InvalidParams(message="unknown MCP server", data={"serverId": request.server_id})
        params = request.params if isinstance(request.params, dict) else None
        try:
            result = await served.caller.send_raw_request(request.method, params)
        except MCPError as exc:
            error: dict[str, Any] = {"code": exc.error.code, "message": exc.error.message}
            if exc.error.data is not None:
                error["data"] = exc.error.data
            return {"error": error}
        return {"result": result}

    # -- the stdio relay -----------------------------------------------------------------------------------

    async def _listen(self) -> str:
        if self._listening is None:
            self._listening = anyio.Event()
            self._socket_dir = tempfile.mkdtemp(prefix="acp-session-mcp-")
            self._start_soon(self._serve_socket, os.path.join(self._socket_dir, "s"))
        await self._listening.wait()
        assert self._socket_dir is not None
        return os.path.join(self._socket_dir, "s")

    async def _serve_socket(self, path: str) -> None:
        assert self._listening is not None
        try:
            listener = await anyio.create_unix_listener(path)
            os.chmod(path, 0o600)
        except OSError:
            _log.exception("could not listen for the MCP relay on %s", path)
            self._listening.set()
            return
        self._listening.set()
        try:
            async with listener:
                while True:  # each relay in the connection's task group: a flat tree ends cleanly on close
                    self._start_soon(self._relay_connection, await listener.accept())
        finally:
            with suppress(OSError):
                os.unlink(path)
            if self._socket_dir is not None:
                with suppress(OSError):
                    os.rmdir(self._socket_dir)

    async def _relay_connection(self, stream: Any) -> None:
        """One relay process: its first line is the token naming the server; then MCP's JSON lines."""
        async with stream:
            try:
                token, rest = await _first_line(stream)
            except (anyio.EndOfStream, anyio.BrokenResourceError, ValueError):
                return
            served = self._by_token.get(token)
            if served is None:
                return
            with anyio.CancelScope() as scope:
                served.relays.append(scope)
                try:
                    await serve_lines(served.server, stream, rest)
                finally:
                    served.relays.remove(scope)


async def _first_line(stream: Any, limit: int = 256) -> tuple[str, bytes]:
    data = b""
    while b"\n" not in data:
        data += await stream.receive()
        if len(data) > limit and b"\n" not in data:
            raise ValueError("no token line")
    line, _, rest = data.partition(b"\n")
    return line.decode("ascii", "replace").strip(), rest


async def serve_lines(server: Any, stream: Any, pending: bytes, max_line: int = 16 * 1024 * 1024) -> None:
    """Run the SDK server over a byte stream of newline-delimited JSON-RPC (what an MCP stdio server speaks)."""
    from mcp.shared.message import SessionMessage
    from mcp_types import jsonrpc_message_adapter

    lowlevel = server._lowlevel_server
    to_server, server_reads = anyio.create_memory_object_stream[Any](32)
    server_writes, from_server = anyio.create_memory_object_stream[Any](32)

    async def read() -> None:
        buffer = pending
        async with to_server:
            while True:
                while b"\n" in buffer:
                    line, _, buffer = buffer.partition(b"\n")
                    if line.strip():
                        try:
                            message = jsonrpc_message_adapter.validate_json(line)
                        except ValueError as exc:
                            await to_server.send(exc)
                            continue
                        await to_server.send(SessionMessage(message))
                if len(buffer) > max_line:
                    return
                try:
                    buffer += await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    return

    async def write() -> None:
        async with from_server:
            async for message in from_server:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                await stream.send(data.encode("utf-8") + b"\n")

    async with anyio.create_task_group() as tg:
        tg.start_soon(write)
        tg.start_soon(read)
        await lowlevel.run(server_reads, server_writes, lowlevel.create_initialization_options())
        tg.cancel_scope.cancel()
