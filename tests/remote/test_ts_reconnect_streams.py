"""``receive_steps()`` and ``receive_chunks()`` across a reconnect to the official TypeScript SDK 2.4.0 ``AcpServer``
(tests/interop/ts_server.mjs, which keeps its sessions across connections and replays them on ``session/resume``),
behind the cutting proxy. Both streams are opened before the turn and the network is cut mid-turn: what each gave
adds up to what it gives uncut (each message's text once, the tool call once, the entities in order, the turn's
end), with a ``StreamReconnected`` marker per reconnect before what was missed. Both profiles, both backends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.helpers.cutting_proxy import CutWhileDeciding, cutting_proxy
from tests.helpers.stream_content import Reader, chunk_content, step_content, streamed

from .conftest import TsServer
from .test_ts_reconnect import SLOW, SLOW_TEXT, builder, port_of, reply_chunks, through_proxy

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["http", "ws"])
def scheme(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def ts_server(shared_ts_server: TsServer) -> TsServer:
    """The module's TS server (``shared_ts_server``): each test opens connections and sessions of its own."""
    assert shared_ts_server.process.poll() is None, "the shared TS server died"
    return shared_ts_server.view()


async def allow(request: Any) -> str:
    return next(o.option_id for o in request.options if o.kind.startswith("allow"))


async def uncut(server: TsServer, tmp_path: Path, scheme: str, prompt: str) -> Reader:
    async with (
        cutting_proxy(port_of(server)) as proxy,
        builder().on_request_permission(allow).connect_url(proxy.url(scheme)) as client,
    ):
        conversation = await client.start_conversation(str(tmp_path))

        async def turn() -> None:
            with anyio.fail_after(60):
                await conversation.chat(prompt)

        return await streamed(conversation, turn)


def assert_same_content(cut: Reader, whole: Reader, reconnects: int) -> None:
    chunks, markers = chunk_content(cut.chunk_items)
    assert (chunks, markers) == (chunk_content(whole.chunk_items)[0], reconnects)
    assert step_content(cut) == step_content(whole)
    assert step_content(cut)[2] == ["end_turn"]


async def test_streams_opened_before_a_turn_cut_three_times_get_exactly_the_uncut_content(
    ts_server: TsServer, tmp_path: Path, scheme: str
) -> None:
    whole = await uncut(ts_server, tmp_path, scheme, f"/slow {SLOW}")
    async with through_proxy(ts_server, tmp_path, scheme) as (proxy, client, conversation):

        async def turn() -> None:
            async def cut_three_times() -> None:
                for at in (5, 25, 45):
                    with anyio.fail_after(30):
                        while reply_chunks(conversation) < at:
                            await anyio.sleep(0.01)
                    await proxy.cut_for(0.4)

            async with anyio.create_task_group() as tg:
                tg.start_soon(cut_three_times)
                with anyio.fail_after(90):
                    assert (await conversation.chat(f"/slow {SLOW}")).text == SLOW_TEXT

        cut = await streamed(conversation, turn)
        assert client.reconnection.count == 3
    assert chunk_content(whole.chunk_items)[0] == [("text", SLOW_TEXT)]
    assert_same_content(cut, whole, 3)
    assert any(getattr(c, "replayed", False) for c in cut.chunk_items)


async def test_a_turn_that_ended_while_the_network_was_down_reaches_the_streams_with_its_end(
    ts_server: TsServer, tmp_path: Path, scheme: str
) -> None:
    whole = await uncut(ts_server, tmp_path, scheme, "/slow 10")
    async with through_proxy(ts_server, tmp_path, scheme) as (proxy, client, conversation):

        async def turn() -> None:
            running = conversation.chat("/slow 10")
            with anyio.fail_after(30):
                while reply_chunks(conversation) < 2:
                    await anyio.sleep(0.01)
            await proxy.cut_for(1.5)  # the turn's 0.5 s are over before the client is back
            with anyio.fail_after(30):
                await running

        cut = await streamed(conversation, turn)
        assert client.reconnection.count == 1
    assert_same_content(cut, whole, 1)


async def test_a_tool_call_cut_while_its_permission_is_pending_reaches_the_streams_once(
    ts_server: TsServer, tmp_path: Path, scheme: str
) -> None:
    whole = await uncut(ts_server, tmp_path, scheme, "/permission")
    user = CutWhileDeciding()
    async with cutting_proxy(port_of(ts_server)) as proxy, anyio.create_task_group() as tg:
        tg.start_soon(user.cut, proxy)
        async with builder().on_request_permission(user.answer).connect_url(proxy.url(scheme)) as client:
            conversation = await client.start_conversation(str(tmp_path))

            async def turn() -> None:
                with anyio.fail_after(60):
                    await conversation.chat("/permission")

            cut = await streamed(conversation, turn)
            assert client.reconnection.count == 1 and len(user.asked) == 2
    assert_same_content(cut, whole, 1)
    assert [kind for kind, _ in chunk_content(cut.chunk_items)[0]].count("tool_call") == 1
