"""The caps of ``acp-reference-agent --listen`` against real floods from 127.0.0.1 (issue 51, 11), on both server
backends: initializes whose stream is never opened (2 000 of them grew the server by 84 MiB), WebSockets that never
send ``initialize``, more connections than allowed, and 40 concurrent 16 MiB bodies (+286 MiB). Each cap answers
``503`` with ``Retry-After`` (an upgrade before its ``101``), and the server serves again once there is room."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import httpx
import pytest
from httpx_ws import WebSocketDisconnect, WebSocketUpgradeError, aconnect_ws

from acp_session.server.limits import DEFAULT_LIMITS
from acp_session.server.rules import MAX_BODY_BYTES

from .conftest import Server
from .raw_client import RawAcp, initialize_params

pytestmark = pytest.mark.anyio

BACKENDS = pytest.mark.parametrize("server_backend", ["asyncio", "trio"])
INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": initialize_params()}


def _ws_url(server: Server) -> str:
    return server.url.replace("http://", "ws://")


def _peak_rss_mib(server: Server) -> float:
    """The server process's peak resident memory (its address space's high-water mark)."""
    for line in Path(f"/proc/{server.process.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM")


async def _initialize_all(client: httpx.AsyncClient, server: Server, count: int) -> list[httpx.Response]:
    responses: list[httpx.Response] = []

    async def one() -> None:
        responses.append(await client.post(server.url, json=INIT))

    async with anyio.create_task_group() as tg:
        for _ in range(count):
            tg.start_soon(one)
    return responses


def _assert_busy(response: httpx.Response, option: str) -> None:
    assert response.status_code == 503, (response.status_code, response.text)
    assert response.headers["retry-after"] == "5" and option in response.text, response.text
    assert "acp-connection-id" not in response.headers


@BACKENDS
async def test_abandoned_initializes_are_capped_and_a_stream_or_the_timeout_makes_room(
    start_server: Callable[..., Server], server_backend: str
) -> None:
    """300 initializes whose stream is never opened: the default cap (32) is served, the rest get 503 and no agent;
    opening a stream starts a connection (room for one more), and those never started end after the timeout."""
    server = start_server(backend=server_backend)
    # Ten at a time, each on a new TCP connection: hypercorn closes a connection idle for 5 s, and a server
    # starved of CPU (a loaded machine) can take that long to read a request already sent on a reused one.
    limits = httpx.Limits(max_connections=10, max_keepalive_connections=0)
    with anyio.fail_after(120):
        async with httpx.AsyncClient(limits=limits, timeout=60) as client:
            responses = await _initialize_all(client, server, 300)
            served = [r for r in responses if r.status_code == 200]
            assert len(served) == DEFAULT_LIMITS.max_pending, [r.status_code for r in responses]
            for busy in (r for r in responses if r.status_code != 200):
                _assert_busy(busy, "--max-pending")
            _assert_busy(await client.post(server.url, json=INIT), "--max-pending")
            async with anyio.create_task_group() as tg:
                acp = RawAcp(client, server.url, tg)
                acp.connection_id = served[0].headers["acp-connection-id"]
                await acp.open_stream()  # started: one place free
                assert (await client.post(server.url, json=INIT)).status_code == 200
                _assert_busy(await client.post(server.url, json=INIT), "--max-pending")
                tg.cancel_scope.cancel()
    quick = start_server("--pending-timeout", "0.5", "--max-pending", "2", backend=server_backend)
    with anyio.fail_after(60):
        async with httpx.AsyncClient() as client:
            assert [r.status_code for r in await _initialize_all(client, quick, 3)].count(200) == 2
            while (late := await client.post(quick.url, json=INIT)).status_code == 503:
                await anyio.sleep(0.1)  # the two abandoned connections end after half a second
            assert late.status_code == 200


@BACKENDS
async def test_live_connections_are_capped_over_http_and_websocket(
    start_server: Callable[..., Server], server_backend: str
) -> None:
    server = start_server("--max-connections", "3", backend=server_backend)
    with anyio.fail_after(60):
        async with httpx.AsyncClient() as client, anyio.create_task_group() as tg:
            clients = [RawAcp(client, server.url, tg) for _ in range(3)]
            for acp in clients:
                await acp.connect()
            _assert_busy(await client.post(server.url, json=INIT), "--max-connections 3")
            with pytest.raises(WebSocketUpgradeError) as refused:
                async with aconnect_ws(_ws_url(server), client):
                    pass
            assert refused.value.response.status_code == 503
            assert (await clients[0].delete()).status_code == 202
            async with aconnect_ws(_ws_url(server), client) as ws:  # room for one again
                await ws.send_text(json.dumps(INIT))
                assert json.loads(await ws.receive_text())["result"]["protocolVersion"] == 2
                _assert_busy(await client.post(server.url, json=INIT), "--max-connections 3")
            tg.cancel_scope.cancel()


@BACKENDS
async def test_websockets_that_never_initialize_are_capped_and_closed(
    start_server: Callable[..., Server], server_backend: str
) -> None:
    server = start_server("--max-pending", "2", "--pending-timeout", "1", backend=server_backend)
    with anyio.fail_after(60):
        async with httpx.AsyncClient() as first, httpx.AsyncClient() as second, httpx.AsyncClient() as third:
            async with aconnect_ws(_ws_url(server), first) as silent, aconnect_ws(_ws_url(server), second):
                with pytest.raises(WebSocketUpgradeError) as refused:
                    async with aconnect_ws(_ws_url(server), third):
                        pass
                assert refused.value.response.status_code == 503
                assert refused.value.response.headers["retry-after"] == "5"
                with pytest.raises(WebSocketDisconnect) as closed:
                    await silent.receive_text()  # nothing came within the pending timeout
                assert closed.value.code == 1008 and "--pending-timeout" in (closed.value.reason or "")
            async with aconnect_ws(_ws_url(server), third) as ws:
                await ws.send_text(json.dumps(INIT))
                assert json.loads(await ws.receive_text())["result"]["protocolVersion"] == 2


@BACKENDS
async def test_concurrent_large_bodies_are_refused_past_the_byte_budget(
    start_server: Callable[..., Server], tmp_path: Path, server_backend: str
) -> None:
    """40 concurrent 16 MiB POSTs on one connection: the bodies the budget (32 MiB) has room for are taken, the
    others get 503 without being kept; the server's peak memory grows by a bounded amount (was +286 MiB), and a
    large body alone is taken afterwards (the budget was given back)."""
    server = start_server(backend=server_backend)
    statuses: list[int] = []
    fresh = httpx.Limits(max_connections=50, max_keepalive_connections=0)  # no reuse (see above)
    with anyio.fail_after(240):
        async with (
            httpx.AsyncClient(limits=fresh, timeout=120) as client,
            anyio.create_task_group() as tg,
        ):
            acp = RawAcp(client, server.url, tg)
            await acp.connect()
            before = _peak_rss_mib(server)

            def body(request_id: int) -> bytes:
                params = {"cwd": str(tmp_path), "pad": ""}
                message = {"jsonrpc": "2.0", "id": request_id, "method": "session/list", "params": params}
                size = len(json.dumps(message))
                params["pad"] = "x" * (MAX_BODY_BYTES - size - 64)
                return json.dumps(message).encode()

            async def post(request_id: int) -> None:
                response = await client.post(server.url, content=body(request_id), headers=acp.headers())
                statuses.append(response.status_code)
                if response.status_code == 503:
                    _assert_busy(response, "--max-buffered-bytes")

            async with anyio.create_task_group() as posts:
                for request_id in range(1000, 1040):
                    posts.start_soon(post, request_id)
            grown = _peak_rss_mib(server) - before
            assert statuses.count(202) >= 2 and statuses.count(503) >= 20, statuses
            assert set(statuses) == {202, 503}
            assert grown < 160, f"the server grew by {grown:.0f} MiB"
            alone = await client.post(server.url, content=body(2000), headers=acp.headers())
            assert alone.status_code == 202, alone.text
            answer = await acp.next_message(lambda stream, m: m.get("id") == 2000)
            assert "sessions" in answer["result"]
            tg.cancel_scope.cancel()


def test_a_bad_limit_is_a_usage_error() -> None:
    agent = [sys.executable, "-m", "acp_conformance.agent"]
    for bad in (["--max-pending", "0"], ["--max-connections", "many"], ["--pending-timeout", "-1"]):
        proc = subprocess.run([*agent, "--listen", "127.0.0.1:0", *bad], capture_output=True, text=True, timeout=30)
        assert proc.returncode == 2 and bad[0] in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    proc = subprocess.run([*agent, "--max-buffered-bytes", "1000"], capture_output=True, text=True, timeout=30)
    assert proc.returncode == 2 and "the limits go with --listen" in proc.stderr
