"""Reconnecting to the official TypeScript SDK 2.4.0 ``AcpServer`` (issue 36): tests/interop/ts_server.mjs, whose one
agent app keeps the sessions across connections and answers ``session/resume`` with a replay, behind a TCP proxy
the test controls (``tests/helpers/cutting_proxy.py``). A streamed turn keeps running on the server while the network
is cut; the same ``Conversation`` ends it over a new connection with exactly the agent's text, once. A restarted
server knows no session: ``SessionLost``. Both profiles (Streamable HTTP, WebSocket), both backends."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from acp_session import ClientBuilder, ClientConnection, Conversation
from acp_session.client_errors import SessionLost
from acp_session.conversation import ChatError, ChatText
from tests.helpers.cutting_proxy import CuttingProxy, CutWhileDeciding, cutting_proxy

from .conftest import TsServer, start_ts_server

pytestmark = pytest.mark.anyio

SLOW = 80
SLOW_TEXT = "".join(f"chunk {n}. " for n in range(1, SLOW + 1))  # what /slow 80 streams, 50 ms a chunk


@pytest.fixture(params=["http", "ws"])
def scheme(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def ts_server(shared_ts_server: TsServer) -> TsServer:
    """The module's TS server (``shared_ts_server``): each test opens connections and sessions of its own."""
    assert shared_ts_server.process.poll() is None, "the shared TS server died"
    return shared_ts_server.view()


def port_of(server: TsServer) -> int:
    return int(server.url.rsplit(":", 1)[1].split("/")[0])


def builder() -> ClientBuilder:
    return ClientBuilder("ts-reconnect", "1.0").reconnect(attempts=10, backoff=0.1, max_backoff=0.5, deadline=60.0)


@asynccontextmanager
async def through_proxy(
    server: TsServer, cwd: Path, scheme: str
) -> AsyncIterator[tuple[CuttingProxy, ClientConnection, Conversation]]:
    async with cutting_proxy(port_of(server)) as proxy, builder().connect_url(proxy.url(scheme)) as client:
        yield proxy, client, await client.start_conversation(str(cwd))


def reply_chunks(conversation: Conversation) -> int:
    return sum(m.text.count("chunk ") for m in conversation.messages() if m.role == "agent")


async def servers_record(server: TsServer, session_id: str, cwd: str) -> list[tuple[str, str]]:
    """The session as the server keeps it: resumed with replay on a connection of its own, straight to the server."""
    async with ClientBuilder("record", "1.0").connect_url(server.url) as client:
        resumed = await Conversation.resume(client, session_id, cwd)
        return [(m.role, m.text) for m in resumed.messages()]


async def test_a_streamed_turn_cut_three_times_completes_with_exactly_the_agents_text(
    ts_server: TsServer, tmp_path: Path, scheme: str
) -> None:
    async with through_proxy(ts_server, tmp_path, scheme) as (proxy, client, conversation):
        turn = conversation.chat(f"/slow {SLOW}")

        async def cut_three_times() -> None:
            for at in (5, 25, 45):
                with anyio.fail_after(30):
                    while reply_chunks(conversation) < at:
                        await anyio.sleep(0.01)
                await proxy.cut_for(0.4)  # the turn streams on at the server meanwhile

        async with anyio.create_task_group() as tg:
            tg.start_soon(cut_three_times)
            with anyio.fail_after(90):
                response = await turn
        assert (response.text, response.stop_reason) == (SLOW_TEXT, "end_turn")
        assert client.reconnection.count == 3
        ids = Counter((m.role, m.message_id) for m in conversation.messages())
        assert [key for key, count in ids.items() if count > 1] == []
        with anyio.fail_after(20):
            assert (await conversation.chat_to_completion("after")).text == "You said: after"
        mine = [(m.role, m.text) for m in conversation.messages()]
        expected = [("user", f"/slow {SLOW}"), ("agent", SLOW_TEXT), ("user", "after"), ("agent", "You said: after")]
        assert mine == expected
        with anyio.fail_after(20):
            assert mine == await servers_record(ts_server, conversation.session_id or "", str(tmp_path))


async def test_a_turn_that_ended_while_the_network_was_down_settles_from_the_replay(
    ts_server: TsServer, tmp_path: Path, scheme: str
) -> None:
    async with through_proxy(ts_server, tmp_path, scheme) as (proxy, client, conversation):
        events: list[Any] = []

        async def read() -> None:
            async for event in conversation.chat("/slow 10"):
                events.append(event)

        async def cut_till_it_ended() -> None:
            with anyio.fail_after(30):
                while not any(isinstance(e, ChatText) for e in events):
                    await anyio.sleep(0.01)
            await proxy.cut_for(1.5)  # the turn's 0.5 s are over before the client is back

        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            tg.start_soon(cut_till_it_ended)
        kinds = [e.kind for e in events]
        assert kinds.count("start") == 1 and kinds.count("reconnected") == 1 and kinds[-1] == "done"
        assert events[-1].response.text == "".join(f"chunk {n}. " for n in range(1, 11))
        assert events[-1].response.stop_reason == "end_turn"
        assert any(e.replayed for e in events if isinstance(e, ChatText))  # what came while away is marked
        assert client.reconnection.count == 1


async def test_a_cut_while_a_permission_is_pending_asks_again_and_answers_once(
    ts_server: TsServer, tmp_path: Path, scheme: str
) -> None:
    user = CutWhileDeciding()
    async with cutting_proxy(port_of(ts_server)) as proxy, anyio.create_task_group() as tg:
        tg.start_soon(user.cut, proxy)
        async with builder().on_request_permission(user.answer).connect_url(proxy.url(scheme)) as client:
            conversation = await client.start_conversation(str(tmp_path))
            with anyio.fail_after(60):
                response = await conversation.chat("/permission")
            assert (response.text, response.stop_reason) == ("Done.", "end_turn")
            assert len(user.asked) == 2 and user.asked[0] == user.asked[1]  # asked again, about the same thing
            assert [c.status for c in response.tool_calls] == ["completed"]
            assert client.reconnection.count == 1


async def test_a_restarted_server_ends_the_turn_with_session_lost(node: str, tmp_path: Path, scheme: str) -> None:
    ts_server = start_ts_server(node, tmp_path)  # its own: this one is killed
    restarted: list[TsServer] = [ts_server]
    try:
        async with through_proxy(ts_server, tmp_path, scheme) as (proxy, client, conversation):
            events: list[Any] = []
            with anyio.fail_after(60):
                async for event in conversation.chat(f"/slow {SLOW}"):
                    events.append(event)
                    if isinstance(event, ChatText) and len(events) == 3:
                        ts_server.kill()  # the sessions die with the server process
                        (tmp_path / "restarted").mkdir()
                        restarted.append(start_ts_server(node, tmp_path / "restarted"))
                        proxy.upstream_port = port_of(restarted[-1])
                        proxy.cut()
            assert [e.kind for e in events[-2:]] == ["session_lost", "error"], repr(events[-1].error)
            assert isinstance(events[-1], ChatError) and isinstance(events[-1].error, SessionLost)
            with anyio.fail_after(20):
                other = await client.start_conversation(str(tmp_path))  # the connection itself is fine
                assert (await other.chat_to_completion("anyone")).text == "You said: anyone"
    finally:
        for server in restarted:
            if server.process.poll() is None:
                server.kill()
            for stream in (server.process.stdout, server.process.stderr):
                if stream is not None:
                    stream.close()
