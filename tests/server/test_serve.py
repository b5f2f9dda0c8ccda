"""The library's server run in the test's own event loop (asyncio and trio, hypercorn's matching flavour), serving
a small application of its own: ``open_server`` and ``serve`` report the URL with the port picked; the handler
learns its client (peer, headers without ``Authorization``, profile) and its end (``on_close``, ``wait_closed``),
and can end it (``close``); one session served on two connections reaches both; the bearer token: ``401`` without
it, at the WebSocket upgrade too, and the token in no log line."""

from __future__ import annotations

import json
import logging
from typing import Any

import anyio
import httpx
import pytest
from httpx_ws import WebSocketUpgradeError, aconnect_ws

from acp_session.rpc import Connection
from acp_session.server import IncomingConnection, ServerOptions, open_server, serve
from tests.remote_server.raw_client import RawAcp, initialize_params

pytestmark = pytest.mark.anyio

TOKEN = "Zq7-server-token-never-logged"
WAIT = 15


class App:
    """A tiny ACP endpoint: answers ``initialize``, tells a client what the server said about it (``_test/info``),
    sends an update of a session to every connection (``_test/broadcast``), and ends a connection on request."""

    def __init__(self) -> None:
        self.live: dict[str, Connection] = {}
        self.closed: list[str] = []

    async def handle(self, client: IncomingConnection) -> None:
        client.on_close(lambda: self.closed.append(client.connection_id))
        async with Connection(client.transport, peer_name=f"client {client.connection_id}") as rpc:
            rpc.on_request("initialize", lambda params: {"protocolVersion": 2, "capabilities": {}})
            rpc.on_request("_test/info", lambda params: self.info(client))
            rpc.on_request("_test/broadcast", self.broadcast)
            rpc.on_notification("_test/close", lambda params: client.close())
            self.live[client.connection_id] = rpc
            try:
                await rpc.wait_closed()
            finally:
                del self.live[client.connection_id]

    @staticmethod
    def info(client: IncomingConnection) -> dict[str, Any]:
        return {
            "id": client.connection_id,
            "peer": list(client.peer or ()),
            "profile": client.profile,
            "headers": dict(client.headers),
            "closed": client.closed,
        }

    async def broadcast(self, params: dict[str, Any]) -> dict[str, Any]:
        update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": params["text"]}}
        for rpc in list(self.live.values()):
            await rpc.notify("session/update", {"sessionId": params["session"], "update": update})
        return {}


def _init() -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": initialize_params()}


async def test_open_server_serves_the_handler_and_tells_it_its_client() -> None:
    app = App()
    async with open_server(app.handle) as server, httpx.AsyncClient(headers={"x-editor": "test"}) as http:
        assert server.port > 0 and server.url == f"http://127.0.0.1:{server.port}/acp"
        async with anyio.create_task_group() as tg:
            acp = RawAcp(http, server.url, tg)
            await acp.connect()
            info = (await acp.call("_test/info", {}))["result"]
            assert info["id"] == acp.connection_id and info["profile"] == "http" and not info["closed"]
            assert info["peer"][0] == "127.0.0.1" and info["peer"][1] > 0
            assert info["headers"]["x-editor"] == "test" and info["headers"]["content-type"] == "application/json"
            assert server.connections == 1
            assert (await acp.delete()).status_code == 202
            assert app.closed == [acp.connection_id]  # the close hook ran before DELETE was answered
            tg.cancel_scope.cancel()


async def test_serve_is_a_task_and_the_application_can_end_a_connection() -> None:
    app = App()
    async with anyio.create_task_group() as outer:
        url = await outer.start(serve, app.handle, ServerOptions(port=0))
        assert url.startswith("http://127.0.0.1:") and not url.endswith(":0/acp")
        async with httpx.AsyncClient() as http, anyio.create_task_group() as tg:
            acp = RawAcp(http, url, tg)
            await acp.connect()
            assert (await acp.post({"jsonrpc": "2.0", "method": "_test/close", "params": {}})).status_code == 202
            with anyio.fail_after(WAIT):
                await acp.stream_ended[None].wait()  # the connection stream ended with the connection
            assert app.closed == [acp.connection_id] and not app.live
            refused = await acp.post({"jsonrpc": "2.0", "id": 9, "method": "_test/info", "params": {}})
            assert refused.status_code == 404
            tg.cancel_scope.cancel()
        outer.cancel_scope.cancel()


async def test_one_session_on_two_connections_reaches_both() -> None:
    app = App()
    async with open_server(app.handle) as server, httpx.AsyncClient() as http, anyio.create_task_group() as tg:
        first, second = RawAcp(http, server.url, tg), RawAcp(http, server.url, tg)
        for client in (first, second):
            await client.connect()
            await client.open_stream("s1")
        answer = await first.call("_test/broadcast", {"session": "s1", "text": "to all"})
        assert answer["result"] == {}
        for client in (first, second):
            if not client.updates_seen():  # the first may have read it while waiting for the answer
                await client.next_message(lambda stream, m: stream == "s1" and m.get("method") == "session/update")
            assert [u["content"]["text"] for u in client.updates_seen()] == ["to all"]
            assert [stream for stream, m in client.seen if m.get("method") == "session/update"] == ["s1"]
        tg.cancel_scope.cancel()


async def test_a_websocket_client_is_a_connection_too() -> None:
    app = App()
    async with open_server(app.handle) as server, httpx.AsyncClient(headers={"x-editor": "ws"}) as http:
        async with aconnect_ws(server.url.replace("http://", "ws://"), http) as ws:
            await ws.send_text(json.dumps(_init()))
            assert json.loads(await ws.receive_text())["result"]["protocolVersion"] == 2
            await ws.send_text(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "_test/info", "params": {}}))
            info = json.loads(await ws.receive_text())["result"]
            assert info["profile"] == "websocket" and info["headers"]["x-editor"] == "ws"
            assert ws.response is not None and ws.response.headers["acp-connection-id"] == info["id"]
        with anyio.fail_after(WAIT):
            while not app.closed:
                await anyio.sleep(0.01)
        assert app.closed == [info["id"]]


async def _upgrade_status(url: str, headers: dict[str, str]) -> int:
    async with httpx.AsyncClient(headers=headers) as http:
        try:
            async with aconnect_ws(url.replace("http://", "ws://"), http) as ws:
                await ws.send_text(json.dumps(_init()))
                assert json.loads(await ws.receive_text())["result"]["protocolVersion"] == 2
                assert ws.response is not None
                return ws.response.status_code
        except WebSocketUpgradeError as refused:
            return refused.response.status_code


async def test_with_a_token_every_request_needs_it(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    app = App()
    bearer = {"authorization": f"Bearer {TOKEN}"}
    async with open_server(app.handle, ServerOptions(token=TOKEN)) as server, httpx.AsyncClient() as http:
        for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": f"Basic {TOKEN}"}):
            refused = await http.post(server.url, json=_init(), headers=headers)
            assert refused.status_code == 401 and refused.headers["www-authenticate"] == "Bearer"
            assert "Authorization: Bearer" in refused.text and "acp-connection-id" not in refused.headers
        assert not app.closed and server.connections == 0  # a refused initialize made no connection
        assert await _upgrade_status(server.url, {}) == 401
        assert await _upgrade_status(server.url, {"authorization": "Bearer wrong"}) == 401
        assert await _upgrade_status(server.url, bearer) == 101
        async with httpx.AsyncClient(headers=bearer) as authorized, anyio.create_task_group() as tg:
            acp = RawAcp(authorized, server.url, tg)
            await acp.connect()  # initialize 200, then the stream
            info = (await acp.call("_test/info", {}))["result"]
            assert "authorization" not in info["headers"]  # the token is the server's, not the application's
            # Every request of the connection needs the token, not only the first.
            stray = await http.post(server.url, json={"jsonrpc": "2.0", "method": "x"}, headers=acp.headers())
            assert stray.status_code == 401
            assert (await http.delete(server.url, headers=acp.headers())).status_code == 401
            assert (await acp.delete()).status_code == 202
            tg.cancel_scope.cancel()
    assert "without the server's token" in caplog.text
    assert TOKEN not in caplog.text


async def test_a_failing_handler_ends_its_connection_not_the_server(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="acp_session.server")
    app = App()
    failures = 0

    async def flaky(client: IncomingConnection) -> None:
        nonlocal failures
        if failures < 3:
            failures += 1
            raise RuntimeError("the application broke")
        await app.handle(client)

    async with open_server(flaky) as server, httpx.AsyncClient() as http:
        for _ in range(3):
            refused = await http.post(server.url, json=_init())
            assert refused.status_code == 503 and "did not answer initialize" in refused.text
        assert (await http.post(server.url, json=_init())).status_code == 200
    assert caplog.text.count("RuntimeError: the application broke") == 1  # the first in full, the others counted
    assert "3 connection handlers that failed in all" in caplog.text
