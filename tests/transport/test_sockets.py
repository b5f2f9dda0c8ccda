"""TCP, Unix-socket and in-memory transports carry the same protocol."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import SocketStream

from acp_session.rpc import Connection
from acp_session.transport import StreamTransport, memory_pair, tcp, unix_socket

pytestmark = pytest.mark.anyio


async def serve_echo(stream: SocketStream) -> None:
    async with Connection(StreamTransport(stream, stream)) as conn:
        conn.on_request("echo", lambda p: p)
        await conn.wait_closed()


async def test_tcp_client() -> None:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, serve_echo)
        async with tcp("127.0.0.1", port) as transport, Connection(transport) as conn:
            assert await conn.request("echo", {"over": "tcp"}) == {"over": "tcp"}
        tg.cancel_scope.cancel()
    await listener.aclose()


@pytest.mark.skipif(sys.platform == "win32", reason="Unix sockets")
async def test_unix_socket_client() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "agent.sock"
        listener = await anyio.create_unix_listener(path)
        async with anyio.create_task_group() as tg:
            tg.start_soon(listener.serve, serve_echo)
            async with unix_socket(path) as transport, Connection(transport) as conn:
                assert await conn.request("echo", [1, "unix"]) == [1, "unix"]
            tg.cancel_scope.cancel()
        await listener.aclose()


async def test_memory_pair_two_connections_talk_both_ways() -> None:
    a, b = memory_pair()
    async with Connection(a) as client, Connection(b) as agent:
        agent.on_request("prompt", lambda p: client_reply)
        client.on_request("ask", lambda p: {"ok": p["q"]})
        client_reply: Any = None

        async def prompt(p: Any) -> Any:
            return await agent.request("ask", {"q": p["q"]})

        agent.on_request("prompt", prompt)
        assert await client.request("prompt", {"q": 1}) == {"ok": 1}


async def test_memory_transport_splits_large_chunks() -> None:
    a, b = memory_pair()
    await a.send(b"x" * 100)
    assert await b.receive(60) == b"x" * 60
    assert await b.receive(60) == b"x" * 40
    await a.aclose()
    with pytest.raises(anyio.EndOfStream):
        await b.receive()
