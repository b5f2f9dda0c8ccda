"""The guards of ``acp-reference-agent --listen`` in front of every request, over raw httpx and httpx-ws on both
server backends: the ``Origin`` check (403 before anything happens, for POST, GET, DELETE and the WebSocket
upgrade; loopback and absent origins allowed on a loopback server; ``--allow-origin``), and ``--require-cookie``
at the WebSocket upgrade (an affinity cookie the server never set gets the HTTP side's 400). A refusal reads the
request's body first, so the HTTP/1.1 connection stays usable for the client's next request (a raw socket)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import anyio
import httpx
import pytest
from httpx_ws import WebSocketUpgradeError, aconnect_ws

from acp_session.server.limits import DRAIN_LIMIT

from .conftest import Server
from .raw_client import RawAcp, initialize_params

pytestmark = pytest.mark.anyio

BACKENDS = pytest.mark.parametrize("server_backend", ["asyncio", "trio"])
FOREIGN = "http://evil.example"
COOKIE_REFUSAL = "Missing or wrong acp_affinity cookie (the server requires it)"


def _init() -> dict[str, object]:
    return {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": initialize_params()}


def _ws_url(server: Server) -> str:
    return server.url.replace("http://", "ws://")


async def _initialize_from(client: httpx.AsyncClient, server: Server, origin: str | None) -> httpx.Response:
    headers = {} if origin is None else {"origin": origin}
    return await client.post(server.url, json=_init(), headers=headers)


async def _upgrade_status(server: Server, headers: dict[str, str]) -> tuple[int, str]:
    """The status of a WebSocket upgrade with these headers (101 when accepted) and the refusal's body."""
    refusal: list[bytes] = []

    async def keep_body(response: httpx.Response) -> None:  # httpx-ws closes a refused upgrade's response
        if response.status_code != 101:
            refusal.append(await response.aread())

    async with httpx.AsyncClient(headers=headers, event_hooks={"response": [keep_body]}) as client:
        try:
            async with aconnect_ws(_ws_url(server), client) as ws:
                assert ws.response is not None
                await ws.send_text(json.dumps(_init()))
                assert json.loads(await ws.receive_text())["result"]["protocolVersion"] == 2
                return ws.response.status_code, ""
        except WebSocketUpgradeError as refused:
            return refused.response.status_code, b"".join(refusal).decode()


def _assert_forbidden(response: httpx.Response, origin: str) -> None:
    assert response.status_code == 403, (response.status_code, response.text)
    assert f"Origin {origin} is not allowed" in response.text and "--allow-origin" in response.text
    assert "acp-connection-id" not in response.headers and "set-cookie" not in response.headers


@BACKENDS
async def test_a_foreign_origin_gets_403_and_changes_nothing(
    start_server: Callable[..., Server], tmp_path: Path, server_backend: str
) -> None:
    server = start_server(backend=server_backend)
    async with httpx.AsyncClient() as client, anyio.create_task_group() as tg:
        _assert_forbidden(await _initialize_from(client, server, FOREIGN), FOREIGN)
        acp = RawAcp(client, server.url, tg)
        await acp.initialize()  # no Origin: a non-browser client
        await acp.open_stream()
        evil = {"origin": FOREIGN}
        new = {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": str(tmp_path), "mcpServers": []}}
        _assert_forbidden(await acp.post(new, **evil), FOREIGN)
        stream = await client.get(server.url, headers=acp.headers(accept="text/event-stream", **evil))
        _assert_forbidden(stream, FOREIGN)
        _assert_forbidden(await client.delete(server.url, headers=acp.headers(**evil)), FOREIGN)
        # None of it happened: the connection is alive and the refused session/new made no session.
        listed = await acp.call("session/list", {})
        assert listed["result"]["sessions"] == []
        assert (await acp.delete()).status_code == 202
        tg.cancel_scope.cancel()
    status, body = await _upgrade_status(server, {"origin": FOREIGN})
    assert status == 403 and f"Origin {FOREIGN} is not allowed" in body


@BACKENDS
async def test_no_origin_and_loopback_origins_are_served_on_loopback(
    start_server: Callable[..., Server], server_backend: str
) -> None:
    server = start_server(backend=server_backend)
    allowed = [None, "http://localhost:5173", "http://127.0.0.1:9", "http://[::1]:8080", "https://LOCALHOST"]
    refused = [
        "null",  # a sandboxed page or a file:// document
        "http://localhost.evil.example",
        "http://127.0.0.1.evil.example:80",
        "ftp://localhost",
        "not an origin",
    ]
    async with httpx.AsyncClient() as client:
        for origin in allowed:
            response = await _initialize_from(client, server, origin)
            assert response.status_code == 200, (origin, response.text)
        for origin in refused:
            assert (await _initialize_from(client, server, origin)).status_code == 403, origin
    assert (await _upgrade_status(server, {"origin": "http://localhost:3000"}))[0] == 101
    assert (await _upgrade_status(server, {}))[0] == 101


@BACKENDS
async def test_allow_origin_adds_origins_and_a_star_allows_any(
    start_server: Callable[..., Server], server_backend: str
) -> None:
    app = "https://app.example:8443"
    server = start_server("--allow-origin", app, "--allow-origin", "http://other.example", backend=server_backend)
    async with httpx.AsyncClient() as client:
        for origin in (app, "HTTPS://App.Example:8443", "http://other.example:80", "http://localhost:1"):
            assert (await _initialize_from(client, server, origin)).status_code == 200, origin
        for origin in ("https://app.example", "http://app.example:8443", FOREIGN):
            assert (await _initialize_from(client, server, origin)).status_code == 403, origin
    assert (await _upgrade_status(server, {"origin": app}))[0] == 101
    assert (await _upgrade_status(server, {"origin": FOREIGN}))[0] == 403
    anyone = start_server("--allow-origin", "*", backend=server_backend)
    async with httpx.AsyncClient() as client:
        assert (await _initialize_from(client, anyone, FOREIGN)).status_code == 200
        assert (await _initialize_from(client, anyone, "null")).status_code == 200
    assert (await _upgrade_status(anyone, {"origin": FOREIGN}))[0] == 101


@BACKENDS
async def test_require_cookie_refuses_an_upgrade_with_a_cookie_it_never_set(
    start_server: Callable[..., Server], server_backend: str
) -> None:
    server = start_server("--require-cookie", backend=server_backend)
    async with httpx.AsyncClient() as client, httpx.AsyncClient() as jarless:
        connection_id = (await client.post(server.url, json=_init())).headers["acp-connection-id"]
        http_cookie = client.cookies["acp_affinity"]
        refused_over_http = await jarless.post(
            server.url,
            json={"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {}},
            headers={"acp-connection-id": connection_id, "cookie": "acp_affinity=forged"},
        )
    assert (refused_over_http.status_code, refused_over_http.text) == (400, COOKIE_REFUSAL)
    # The upgrade starts a connection, as initialize does: a first one has no cookie and gets one.
    async with httpx.AsyncClient() as client, aconnect_ws(_ws_url(server), client) as ws:
        assert ws.response is not None and ws.response.status_code == 101
        ws_cookie = client.cookies["acp_affinity"]
    assert await _upgrade_status(server, {"cookie": "acp_affinity=forged"}) == (400, COOKIE_REFUSAL)
    assert await _upgrade_status(server, {"cookie": "theme=dark; acp_affinity=forged"}) == (400, COOKIE_REFUSAL)
    # A client coming back returns the cookie of its last connection (a WebSocket's or an HTTP one's).
    assert (await _upgrade_status(server, {"cookie": f"acp_affinity={ws_cookie}"}))[0] == 101
    assert (await _upgrade_status(server, {"cookie": f"theme=dark; acp_affinity={http_cookie}"}))[0] == 101
    assert (await _upgrade_status(server, {"cookie": "theme=dark"}))[0] == 101
    # Without --require-cookie any cookie is fine.
    lenient = start_server(backend=server_backend)
    assert (await _upgrade_status(lenient, {"cookie": "acp_affinity=forged"}))[0] == 101


async def _read_response(stream: anyio.abc.SocketStream, buffer: bytearray) -> tuple[bytes, dict[str, str], bytes]:
    """One HTTP/1.1 response from ``stream`` (status line, headers, a Content-Length body); ``buffer`` keeps what
    was read beyond it."""
    while b"\r\n\r\n" not in buffer:
        buffer += await stream.receive()
    head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    length = int(headers.get("content-length", "0"))
    while len(rest) < length:
        rest += await stream.receive()
    buffer[:] = rest[length:]
    return status.encode(), headers, rest[:length]


@BACKENDS
async def test_a_refusal_reads_the_body_first_so_the_connection_serves_the_next_request(
    start_server: Callable[..., Server], server_backend: str
) -> None:
    """A body that arrives after the headers (its own TCP segment, as httpx writes it): the 403 waits for it, and
    the next request on the connection is answered. Answered before the body was read, hypercorn closed the
    connection under the client, which had already sent its next request there (the flaky "Server disconnected
    without sending a response" of the foreign-origin test)."""
    server = start_server(backend=server_backend)
    port = int(server.url.split(":")[2].split("/")[0])
    body = json.dumps(_init()).encode()
    head = (
        f"POST /acp HTTP/1.1\r\nhost: 127.0.0.1\r\norigin: {FOREIGN}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    ).encode()
    buffer = bytearray()
    with anyio.fail_after(30):
        async with await anyio.connect_tcp("127.0.0.1", port) as stream:
            await stream.send(head)
            with anyio.move_on_after(0.5):  # a server that answers before the body comes has time to do so
                buffer += await stream.receive()
            await stream.send(body + b"GET /elsewhere HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
            status, headers, text = await _read_response(stream, buffer)
            assert status.startswith(b"HTTP/1.1 403") and b"is not allowed" in text
            assert headers.get("connection") != "close"
            status, _, text = await _read_response(stream, buffer)
            assert status.startswith(b"HTTP/1.1 404") and text == b"Not Found: the ACP endpoint is /acp"
        # A body too large to read on is not waited for: the refusal says the connection closes.
        async with await anyio.connect_tcp("127.0.0.1", port) as stream:
            huge = head.replace(f"content-length: {len(body)}".encode(), f"content-length: {DRAIN_LIMIT + 1}".encode())
            await stream.send(huge)
            status, headers, _ = await _read_response(stream, bytearray())
            assert status.startswith(b"HTTP/1.1 403") and headers.get("connection") == "close"
            with pytest.raises(anyio.EndOfStream):  # and the server closes it (the client waits for that)
                while True:
                    await stream.receive()
