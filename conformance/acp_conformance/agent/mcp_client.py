"""The reference agent's MCP client (``/mcp``): connect to a session's MCP servers with the official ``mcp``
SDK, list their tools and call one, over stdio, HTTP or MCP-over-ACP (``mcp/message`` on this connection).

Needs the optional ``mcp`` extra; without it the agent advertises no MCP transport at all.
"""

from __future__ import annotations

import importlib.util
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio

from acp_session.rpc import Connection, json_decode

__all__ = ["MCP_MODERN_VERSION", "available", "connect", "transports"]

MCP_MODERN_VERSION = "2026-07-28"
"""MCP-over-ACP carries each request on its own (the per-request MCP protocol, no initialize handshake)."""


def available() -> bool:
    """Whether the ``mcp`` SDK is installed (the agent advertises MCP transports only then)."""
    try:
        return importlib.util.find_spec("mcp") is not None
    except (ImportError, ValueError):  # a module set to None in sys.modules (blocked): not installed
        return False


def transports() -> frozenset[str]:
    return frozenset({"stdio", "http", "acp"}) if available() else frozenset()


@asynccontextmanager
async def _over_acp(conn: Connection, server_id: str) -> AsyncIterator[Any]:
    """An MCP client transport whose requests are ACP ``mcp/message`` requests to the client."""
    from mcp.shared.message import SessionMessage
    from mcp_types import ErrorData, JSONRPCError, JSONRPCRequest, JSONRPCResponse

    to_client, from_mcp = anyio.create_memory_object_stream[Any](64)
    to_mcp, from_client = anyio.create_memory_object_stream[Any](64)

    async def relay(message: Any) -> None:
        inner = message.message
        params = {"serverId": server_id, "requestId": str(inner.id), "method": inner.method}
        if inner.params is not None:
            params["params"] = inner.params
        try:
            outcome = await conn.request("mcp/message", params, decode=json_decode)
        except Exception as exc:  # the ACP call itself failed: an inner error the MCP client can report
            reply: Any = JSONRPCError(jsonrpc="2.0", id=inner.id, error=ErrorData(code=-32603, message=str(exc)))
        else:
            if isinstance(outcome, dict) and "result" in outcome:
                result = outcome["result"] if isinstance(outcome["result"], dict) else {}
                reply = JSONRPCResponse(jsonrpc="2.0", id=inner.id, result=result)
            else:
                error = outcome.get("error") if isinstance(outcome, dict) else None
                if not isinstance(error, dict):
                    error = {"code": -32603, "message": "mcp/message answered without result or error"}
                reply = JSONRPCError(jsonrpc="2.0", id=inner.id, error=ErrorData.model_validate(error))
        await to_mcp.send(SessionMessage(reply))

    async def pump() -> None:
        async with anyio.create_task_group() as tg:
            async for message in from_mcp:
                if isinstance(message.message, JSONRPCRequest):
                    tg.start_soon(relay, message)
                # MCP notifications (cancelled, initialized) have no ACP carrier from consumer to provider.

    async with anyio.create_task_group() as tg:
        tg.start_soon(pump)
        try:
            yield from_client, to_client
        finally:
            tg.cancel_scope.cancel()


@asynccontextmanager
async def connect(conn: Connection, server: dict[str, Any]) -> AsyncIterator[Any]:
    """An entered ``mcp.Client`` for one session MCP server (its ACP wire object)."""
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    kind = server.get("type", "stdio")
    target: Any
    mode = "auto"
    if kind == "stdio":
        env = {e["name"]: e["value"] for e in server.get("env", [])}
        target = StdioServerParameters(command=server["command"], args=list(server.get("args", [])), env=env or None)
    elif kind == "http":
        if server.get("headers"):
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            headers = {h["name"]: h["value"] for h in server["headers"]}
            target = streamable_http_client(server["url"], http_client=httpx2.AsyncClient(headers=headers))
        else:
            target = server["url"]
    elif kind == "acp":
        target = _over_acp(conn, server["serverId"])
        mode = MCP_MODERN_VERSION
    else:
        raise ValueError(f"unsupported MCP transport {kind!r}")
    async with Client(target, mode=mode) as client:
        yield client
