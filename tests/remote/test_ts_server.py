"""Our remote transports against the official TypeScript SDK 2.4.0 server (``AcpServer`` over
``experimental/node``, WebSocket through npm ``ws``), serving the scripted v2 agent of tests/interop/ts_server.mjs.

Every test runs over both profiles (Streamable HTTP and WebSocket, ``profile``) and both backends.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from acp_session import ClientBuilder, ClientConnection
from acp_session.conversation import ChatText
from acp_session.errors import ConnectionClosed, RemoteHttpError
from acp_session.schema.types import RequestPermissionRequest, SessionConfigSelect
from acp_session.transport.remote import RemoteDialer, cookie_names

from .conftest import TsServer, start_ts_server

pytestmark = pytest.mark.anyio

TOKEN = "Bearer remote-test-token-1234"


@pytest.fixture
def ts_server(shared_ts_server: TsServer) -> TsServer:
    """The module's TS server, its ``requests()`` this test's own; a node start is most of such a test's CPU."""
    assert shared_ts_server.process.poll() is None, "the shared TS server died"
    return shared_ts_server.view()


@pytest.fixture(params=["http", "ws"])
def profile(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def url_of(server: TsServer, profile: str) -> str:
    return server.url if profile == "http" else server.ws_url


@asynccontextmanager
async def connected(
    server: TsServer, profile: str, builder: ClientBuilder | None = None, **options: Any
) -> AsyncIterator[ClientConnection]:
    builder = builder or ClientBuilder("acp-session-remote", "1.0")
    url = options.pop("url", None) or url_of(server, profile)
    async with builder.connect_url(url, headers={"Authorization": TOKEN}, **options) as client:
        yield client


async def test_whole_turn_streams_text(ts_server: TsServer, profile: str, tmp_path: Path) -> None:
    chunks: list[str] = []
    builder = ClientBuilder("acp-session-remote", "1.0").on_session_update(
        lambda note: (
            chunks.append(note.update.content.text) if type(note.update).__name__ == "AgentMessageChunk" else None
        )
    )
    async with connected(ts_server, profile, builder) as client:
        assert client.protocol.version == 2
        assert client.agent.info.name == "acp-remote-ts-server"
        conversation = await client.start_conversation(str(tmp_path))
        with anyio.fail_after(20):
            events = [event async for event in conversation.chat("hello there")]
            pieces = [event.text for event in events if isinstance(event, ChatText)]
            assert "".join(pieces) == "You said: hello there"  # events may join chunks that came together
            assert chunks == ["You ", "said: ", "hello ", "there"]  # streamed word by word, in order
            second = await conversation.chat_to_completion("again")
        assert (second.text, second.stop_reason) == ("You said: again", "end_turn")
        texts = [m.text for m in conversation.messages()]
        assert texts == ["hello there", "You said: hello there", "again", second.text]
    requests = ts_server.requests()
    assert requests and all(r["authorization"] == TOKEN for r in requests)
    if profile == "http":
        assert [r["method"] for r in requests[:2]] == ["POST", "GET"]  # initialize, then the connection's stream
        assert requests[-1]["method"] == "DELETE"
        session_posts = [r for r in requests if r["method"] == "POST" and r["session"] is not None]
        assert {r["session"] for r in session_posts} == {conversation.session_id}
    else:
        assert [(r["method"], r["upgrade"]) for r in requests] == [("GET", "websocket")]


async def test_permission_answered_over_the_session_stream(ts_server: TsServer, profile: str, tmp_path: Path) -> None:
    asked: list[RequestPermissionRequest] = []

    def allow(request: RequestPermissionRequest) -> str:
        asked.append(request)
        return "allow-once"

    builder = ClientBuilder("acp-session-remote", "1.0").on_request_permission(allow)
    async with connected(ts_server, profile, builder) as client:
        conversation = await client.start_conversation(str(tmp_path))
        with anyio.fail_after(20):
            reply = await conversation.chat_to_completion("/permission")
    # The TS server refuses an answer without the session's Acp-Session-Id (400): the turn got its approval.
    assert (reply.text, reply.stop_reason) == ("Done.", "end_turn")
    assert [r.session_id for r in asked] == [conversation.session_id]
    assert [(c.tool_call_id, c.status) for c in reply.tool_calls] == [("tc-2", "completed")]


async def test_a_subagents_updates_come_on_its_own_stream(ts_server: TsServer, profile: str, tmp_path: Path) -> None:
    seen: list[tuple[str, str]] = []
    builder = ClientBuilder("acp-session-remote", "1.0").on_session_update(
        lambda note: seen.append((note.session_id, type(note.update).__name__))
    )
    async with connected(ts_server, profile, builder) as client:
        conversation = await client.start_conversation(str(tmp_path))
        with anyio.fail_after(20):
            reply = await conversation.chat_to_completion("/subagent")
            assert reply.text == "Delegated."
            child = f"{conversation.session_id}-child"
            while (child, "StateUpdate") not in seen:  # the child's stream may lag its parent's
                await anyio.sleep(0.02)
    assert (child, "AgentMessageChunk") in seen
    if profile == "http":
        assert child in {r["session"] for r in ts_server.requests() if r["method"] == "GET"}


async def test_cancel_ends_the_turn_cancelled(ts_server: TsServer, profile: str, tmp_path: Path) -> None:
    async with connected(ts_server, profile) as client:
        conversation = await client.start_conversation(str(tmp_path))
        with anyio.fail_after(20):
            turn = conversation.chat("/slow 200")  # 10 s of chunks
            await anyio.sleep(0.5)
            await conversation.cancel()
            reply = await turn
            assert reply.stop_reason == "cancelled"
            assert (await conversation.chat_to_completion("after")).text == "You said: after"


async def test_config_options(ts_server: TsServer, profile: str, tmp_path: Path) -> None:
    async with connected(ts_server, profile) as client:
        conversation = await client.start_conversation(str(tmp_path))
        (mode,) = conversation.session.config_options
        assert isinstance(mode, SessionConfigSelect) and mode.current_value == "code"
        with anyio.fail_after(20):
            (changed,) = await conversation.session.set_config_option("mode", "ask")
            assert isinstance(changed, SessionConfigSelect) and changed.current_value == "ask"
            assert (await conversation.chat_to_completion("why")).text == "You asked: why"


async def test_two_sessions_at_once_then_one_closed(ts_server: TsServer, profile: str, tmp_path: Path) -> None:
    async with connected(ts_server, profile) as client:
        first = await client.start_conversation(str(tmp_path))
        second = await client.start_conversation(str(tmp_path))
        assert first.session_id != second.session_id
        replies: dict[str, str] = {}

        async def run(conversation: Any, prompt: str) -> None:
            replies[conversation.session_id] = (await conversation.chat_to_completion(prompt)).text

        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                tg.start_soon(run, first, "/slow 5")
                tg.start_soon(run, second, "/slow 3")
            assert replies == {
                first.session_id: "".join(f"chunk {i}. " for i in range(1, 6)),
                second.session_id: "".join(f"chunk {i}. " for i in range(1, 4)),
            }
            # Closing one session (session/close) leaves the connection, and the other session, working.
            turn = second.chat("/slow 4")
            await first.disconnect()
            assert not client.rpc.closed
            assert (await turn).stop_reason == "end_turn"
            assert (await second.chat_to_completion("still here")).text == "You said: still here"
    if profile == "ws":
        assert len(ts_server.requests()) == 1  # one socket the whole time: session/close did not close it


async def test_the_servers_cookie_comes_back_on_every_request(
    ts_server: TsServer, profile: str, tmp_path: Path
) -> None:
    dialer = RemoteDialer(url_of(ts_server, profile), headers={"Authorization": TOKEN})
    builder = ClientBuilder("acp-session-remote", "1.0")
    async with builder.connect_url(dialer) as client:
        conversation = await client.start_conversation(str(tmp_path))
        await conversation.chat_to_completion("hi")
    assert cookie_names(dialer.cookies) == ["acp-affinity"]
    async with builder.connect_url(dialer) as client:  # a reconnect through the same dialer keeps the jar
        await (await client.start_conversation(str(tmp_path))).chat_to_completion("hi")
    requests = ts_server.requests()
    assert requests[0]["cookie"] is None
    assert all(r["cookie"] == "acp-affinity=node-1" for r in requests[1:]), requests
    assert len(requests) >= (2 if profile == "ws" else 8)


async def test_repeated_initialize_is_refused_with_400(ts_server: TsServer, tmp_path: Path) -> None:
    async with connected(ts_server, "http") as client:
        with anyio.fail_after(10), pytest.raises(RemoteHttpError) as caught:
            await client.initialize()
        assert caught.value.status == 400
        assert "Initialize not allowed" in caught.value.body
        assert not client.rpc.closed  # only that request failed
        await (await client.start_conversation(str(tmp_path))).chat_to_completion("fine")


async def test_unknown_connection_404_ends_the_transport(ts_server: TsServer, tmp_path: Path) -> None:
    no_reconnect = ClientBuilder("acp-session-remote", "1.0").reconnect(False)  # the transport's own end, as is
    async with connected(ts_server, "http", no_reconnect) as client:
        connection_id = client.rpc.transport.connection_id  # type: ignore[union-attr]
        async with httpx.AsyncClient() as raw:
            deleted = await raw.delete(ts_server.url, headers={"Acp-Connection-Id": connection_id})
        assert deleted.status_code == 202
        with anyio.fail_after(10), pytest.raises(ConnectionClosed) as caught:
            await client.start_conversation(str(tmp_path))
        assert client.rpc.closed
        assert "connection" in str(caught.value).lower()  # the transport's words or the server's 404 body
        assert TOKEN.split()[1] not in str(caught.value)


async def test_409_detaches_only_that_session(ts_server: TsServer, tmp_path: Path) -> None:
    async with connected(ts_server, "http") as client:
        first = await client.start_conversation(str(tmp_path))
        assert first.session_id is not None and first.session_id.startswith("sess-")
        after = f"sess-{int(first.session_id.removeprefix('sess-')) + 1}"  # the server numbers its sessions
        connection_id = client.rpc.transport.connection_id  # type: ignore[union-attr]
        headers = {"Acp-Connection-Id": connection_id, "Acp-Session-Id": after, "Accept": "text/event-stream"}
        async with httpx.AsyncClient(timeout=None) as raw, raw.stream("GET", ts_server.url, headers=headers) as held:
            assert held.status_code == 200  # another reader holds the next session's stream
            second = await client.start_conversation(str(tmp_path))
            assert second.session_id == after
            with anyio.fail_after(10), pytest.raises(RemoteHttpError) as caught:
                await second.chat_to_completion("hello")
            assert caught.value.status == 409
            with anyio.fail_after(10):
                assert (await first.chat_to_completion("hi")).text == "You said: hi"
            assert not client.rpc.closed


async def test_413_fails_only_that_request(node: str, tmp_path: Path) -> None:
    server = start_ts_server(node, tmp_path, "--max-body", "65536")
    try:
        async with connected(server, "http") as client:
            conversation = await client.start_conversation(str(tmp_path))
            with anyio.fail_after(10), pytest.raises(RemoteHttpError) as caught:
                await conversation.chat_to_completion("x" * 100_000)
            assert caught.value.status == 413
            with anyio.fail_after(10):
                assert (await conversation.chat_to_completion("small")).text == "You said: small"
    finally:
        server.kill()


async def test_server_killed_mid_turn(node: str, profile: str, tmp_path: Path) -> None:
    ts_server = start_ts_server(node, tmp_path)  # its own: this one is killed
    try:
        async with connected(ts_server, profile) as client:
            conversation = await client.start_conversation(str(tmp_path))
            with anyio.fail_after(20):
                turn = conversation.chat("/slow 400")
                await anyio.sleep(0.5)
                ts_server.kill()
                with pytest.raises(ConnectionClosed):
                    await turn
                assert client.rpc.closed
    finally:
        if ts_server.process.poll() is None:
            ts_server.kill()
        for stream in (ts_server.process.stdout, ts_server.process.stderr):
            if stream is not None:
                stream.close()


async def test_session_streams_past_the_limit_are_detached(ts_server: TsServer, tmp_path: Path) -> None:
    from acp_session.transport.remote import RemoteLimits

    async with connected(ts_server, "http", limits=RemoteLimits(max_session_streams=1)) as client:
        first = await client.start_conversation(str(tmp_path))
        second = await client.start_conversation(str(tmp_path))
        with anyio.fail_after(20):
            with pytest.raises(RemoteHttpError) as caught:
                await second.chat_to_completion("no stream for me")
            assert caught.value.status == 0 and "could not be opened" in caught.value.message
            assert (await first.chat_to_completion("fine")).text == "You said: fine"


async def test_a_protocol_version_1_agent(node: str, profile: str, tmp_path: Path) -> None:
    server = start_ts_server(node, tmp_path, "--v1")
    try:
        async with connected(server, profile) as client:
            assert client.protocol.version == 1
            conversation = await client.start_conversation(str(tmp_path))
            with anyio.fail_after(20):
                reply = await conversation.chat_to_completion("over the wire")
            assert (reply.text, reply.stop_reason) == ("You said: over the wire", "end_turn")
    finally:
        server.kill()
