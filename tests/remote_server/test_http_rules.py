"""Every status-code rule of ``acp-reference-agent --listen`` over raw HTTP (httpx), and the message routing:
the initialize answer in the 200 body, session/new on the connection stream, a session's updates, the agent's
requests and the answers to session-scoped POSTs on that session's stream, buffering until a stream is opened,
DELETE, and the affinity cookie."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import anyio
import httpx
import pytest

from .conftest import Server
from .raw_client import RawAcp, initialize_params, text_of

pytestmark = pytest.mark.anyio


@pytest.fixture
def server(start_server: Callable[..., Server]) -> Server:
    return start_server()


async def test_initialize_answers_in_the_body_with_the_connection_id_and_a_cookie(server: Server) -> None:
    async with httpx.AsyncClient() as client:
        message = {"jsonrpc": "2.0", "id": "init-1", "method": "initialize", "params": initialize_params()}
        response = await client.post(server.url, json=message)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.headers["acp-connection-id"]
    body = response.json()
    assert body["id"] == "init-1" and body["result"]["protocolVersion"] == 2
    assert body["result"]["info"]["name"] == "acp-reference-agent"
    assert "acp_affinity" in response.cookies


async def test_refusals_before_any_connection(server: Server) -> None:
    async with httpx.AsyncClient() as client:
        init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize_params()})
        wrong_type = await client.post(server.url, content=init, headers={"content-type": "text/plain"})
        assert wrong_type.status_code == 415
        too_big = await client.post(
            server.url, content=b" " * (16 * 1024 * 1024 + 1), headers={"content-type": "application/json"}
        )
        assert too_big.status_code == 413
        not_json = await client.post(server.url, content=b"{nope", headers={"content-type": "application/json"})
        assert not_json.status_code == 400
        batch = await client.post(server.url, content=f"[{init}]", headers={"content-type": "application/json"})
        assert batch.status_code == 400
        assert batch.json()["id"] is None and batch.json()["error"]["code"] == -32600
        no_connection = await client.post(
            server.url, json={"jsonrpc": "2.0", "id": 2, "method": "session/list", "params": {}}
        )
        assert no_connection.status_code == 400
        unknown = {"acp-connection-id": "no-such-connection"}
        post = await client.post(
            server.url, json={"jsonrpc": "2.0", "id": 3, "method": "session/list", "params": {}}, headers=unknown
        )
        assert post.status_code == 404
        get = await client.get(server.url, headers={**unknown, "accept": "text/event-stream"})
        assert get.status_code == 404
        assert (await client.delete(server.url, headers=unknown)).status_code == 404
        assert (await client.delete(server.url)).status_code == 400
        assert (await client.put(server.url, content=b"{}")).status_code == 405
        assert (await client.post(server.url.replace("/acp", "/other"), content=init)).status_code == 404


async def test_refusals_on_a_connection(server: Server, tmp_path: Path) -> None:
    async with httpx.AsyncClient() as client, anyio.create_task_group() as tg:
        acp = RawAcp(client, server.url, tg)
        await acp.initialize()
        again = await acp.post({"jsonrpc": "2.0", "id": 9, "method": "initialize", "params": initialize_params()})
        assert again.status_code == 400
        no_accept = await client.get(server.url, headers=acp.headers(accept="application/json"))
        assert no_accept.status_code == 406
        await acp.open_stream()
        second_reader = await client.get(server.url, headers=acp.headers(accept="text/event-stream"))
        assert second_reader.status_code == 409
        session = await acp.new_session(str(tmp_path))
        second_session_reader = await client.get(server.url, headers=acp.headers(session, accept="text/event-stream"))
        assert second_session_reader.status_code == 409
        prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}
        message = {"jsonrpc": "2.0", "id": 50, "method": "session/prompt", "params": prompt}
        assert (await acp.post(message)).status_code == 400  # no Acp-Session-Id
        assert (await acp.post(message, session="sess-other")).status_code == 400  # mismatched
        # session/cancel is session-scoped even as a notification; params.sessionId needs the header too.
        cancel = {"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}
        assert (await acp.post(cancel)).status_code == 400
        extension = {"jsonrpc": "2.0", "method": "_x/ping", "params": {"sessionId": session}}
        assert (await acp.post(extension)).status_code == 400
        assert (await acp.post(message, session=session)).status_code == 202
        updates = await acp.until_idle(session)
        assert text_of(updates).startswith("Hello! I am the ACP reference agent.")
        tg.cancel_scope.cancel()


async def test_messages_go_on_their_streams_and_wait_for_a_reader(server: Server, tmp_path: Path) -> None:
    async with httpx.AsyncClient() as client, anyio.create_task_group() as tg:
        acp = RawAcp(client, server.url, tg)
        await acp.initialize()
        # The session/new answer is written before the connection stream is open: it is held for the reader.
        request_id = await acp.send_request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        await anyio.sleep(0.3)
        await acp.open_stream()
        answer = await acp.next_message(lambda stream, m: m.get("id") == request_id)
        assert acp.seen[-1][0] is None  # on the connection stream
        session = answer["result"]["sessionId"]
        # A prompt before the session stream is open: its answer and updates are held until the stream opens.
        prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "/slow 3"}]}
        prompt_id = await acp.send_request("session/prompt", prompt, session)
        await anyio.sleep(0.5)
        await acp.open_stream(session)
        updates = await acp.until_idle(session)
        assert text_of(updates) == "chunk 1. chunk 2. chunk 3. "
        answered = [(stream, m) for stream, m in acp.seen if m.get("id") == prompt_id]
        assert [stream for stream, _ in answered] == [session] and "messageId" in answered[0][1]["result"]
        assert all(stream == session for stream, m in acp.seen if m.get("method") == "session/update")
        tg.cancel_scope.cancel()


async def test_a_permission_request_and_its_answer_use_the_session_stream(server: Server, tmp_path: Path) -> None:
    async with httpx.AsyncClient() as client, anyio.create_task_group() as tg:
        acp = RawAcp(client, server.url, tg)
        session = await acp.start(str(tmp_path))
        prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "/permission"}]}
        await acp.send_request("session/prompt", prompt, session)
        asked = await acp.next_message(lambda stream, m: m.get("method") == "session/request_permission")
        assert acp.seen[-1][0] == session
        answer = {
            "jsonrpc": "2.0",
            "id": asked["id"],
            "result": {"outcome": {"outcome": "selected", "optionId": "allow-once"}},
        }
        assert (await acp.post(answer)).status_code == 400  # it went out on a session stream: the header is needed
        assert (await acp.post(answer, session="sess-other")).status_code == 400
        assert (await acp.post(answer, session=session)).status_code == 202
        updates = await acp.until_idle(session)
        assert text_of(updates) == "Done: build/ was removed."
        tg.cancel_scope.cancel()


async def test_delete_ends_the_connection_and_its_streams(server: Server, tmp_path: Path) -> None:
    async with httpx.AsyncClient() as client, anyio.create_task_group() as tg:
        acp = RawAcp(client, server.url, tg)
        session = await acp.start(str(tmp_path))
        response = await acp.delete()
        assert response.status_code == 202
        with anyio.fail_after(10):
            await acp.stream_ended[None].wait()
            await acp.stream_ended[session].wait()
        gone = await acp.post({"jsonrpc": "2.0", "id": 7, "method": "session/list", "params": {}})
        assert gone.status_code == 404
        assert (await acp.delete()).status_code == 404


async def test_losing_the_connection_stream_ends_the_connection(server: Server) -> None:
    async with httpx.AsyncClient() as client, anyio.create_task_group() as tg:
        acp = RawAcp(client, server.url, tg)
        await acp.initialize()
        async with client.stream("GET", server.url, headers=acp.headers(accept="text/event-stream")) as stream:
            assert stream.status_code == 200
        with anyio.fail_after(10):
            while (await acp.post({"jsonrpc": "2.0", "method": "_x/ping", "params": {}})).status_code != 404:
                await anyio.sleep(0.05)
        tg.cancel_scope.cancel()


async def test_the_affinity_cookie_can_be_required(start_server: Callable[..., Server], tmp_path: Path) -> None:
    server = start_server("--require-cookie")
    async with httpx.AsyncClient() as client, anyio.create_task_group() as tg:
        acp = RawAcp(client, server.url, tg)
        init = await acp.initialize()
        cookie = init.cookies["acp_affinity"]
        async with httpx.AsyncClient() as jarless:
            refused = await jarless.get(server.url, headers=acp.headers(accept="text/event-stream"))
            assert refused.status_code == 400 and "acp_affinity" in refused.text
            wrong = await jarless.post(
                server.url,
                json={"jsonrpc": "2.0", "id": 1, "method": "session/list", "params": {}},
                headers={**acp.headers(), "cookie": "acp_affinity=forged"},
            )
            assert wrong.status_code == 400
        # httpx's cookie jar returns the cookie on every later request, so the whole exchange works.
        assert client.cookies["acp_affinity"] == cookie
        await acp.open_stream()
        session = await acp.new_session(str(tmp_path))
        assert session.startswith("sess-")
        assert (await acp.delete()).status_code == 202
        tg.cancel_scope.cancel()
