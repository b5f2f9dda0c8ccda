"""``receive_steps()`` and ``receive_chunks()`` across a reconnect: ``acp-reference-agent --listen`` behind the cutting
proxy (``tests/helpers/cutting_proxy.py``). Both streams are opened before the turn, the network is cut mid-turn,
and what each stream gave adds up to what it gives when nothing is cut: every message's text, once, the tool calls
once, the entities in the same order, the turn's end; a ``StreamReconnected`` marker per reconnect, followed by
what was missed (``replayed``). Protocol v2 (``session/resume``) and v1 (``session/load``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.helpers.cutting_proxy import CutWhileDeciding, cutting_proxy
from tests.helpers.stream_content import Reader, chunk_content, step_content, streamed

from .conftest import Server
from .test_reconnect_remote import (
    PROFILES,
    SLOW,
    SLOW_TEXT,
    VERSIONS,
    builder,
    cut_three_times,
    port_of,
    reply_chunks,
    stop_reason_after_a_cut,
    through_proxy,
)

pytestmark = pytest.mark.anyio


async def uncut(server: Server, tmp_path: Path, scheme: str, version: int, prompt: str) -> Reader:
    """The streams of ``prompt`` run on a connection nobody cuts."""
    async with through_proxy(server, tmp_path, scheme, builder(version)) as (_, _client, conversation):

        async def turn() -> None:
            with anyio.fail_after(60):
                await conversation.chat(prompt)

        return await streamed(conversation, turn)


def assert_same_content(cut: Reader, whole: Reader, version: int, reconnects: int) -> None:
    """The cut run's streams add up to the uncut run's; the stop reason is what a cut leaves of it."""
    chunks, markers = chunk_content(cut.chunk_items)
    assert (chunks, markers) == (chunk_content(whole.chunk_items)[0], reconnects)
    entities, states, stops = step_content(cut)
    whole_entities, whole_states, whole_stops = step_content(whole)
    assert (entities, states) == (whole_entities, whole_states)
    assert whole_stops == ["end_turn"] and stops == [stop_reason_after_a_cut(version)]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("scheme", PROFILES)
async def test_streams_opened_before_a_turn_cut_three_times_get_exactly_the_uncut_content(
    shared_server: Server, tmp_path: Path, scheme: str, version: int
) -> None:
    server = shared_server
    whole = await uncut(server, tmp_path, scheme, version, f"/slow {SLOW}")
    async with through_proxy(server, tmp_path, scheme, builder(version)) as (proxy, client, conversation):

        async def turn() -> None:
            async with anyio.create_task_group() as tg:
                tg.start_soon(cut_three_times, proxy, lambda: reply_chunks(conversation))
                with anyio.fail_after(90):
                    assert (await conversation.chat(f"/slow {SLOW}")).text == SLOW_TEXT

        cut = await streamed(conversation, turn)
        # v1: one reconnect (its session/load is answered when the turn ends; the later cuts fail its attempts).
        assert client.reconnection.count == (3 if version == 2 else 1)
    assert chunk_content(whole.chunk_items)[0] == [("text", SLOW_TEXT)]
    assert_same_content(cut, whole, version, client.reconnection.count)
    # Some of the text was missed and caught up, some came live after the marker: both once.
    assert any(getattr(c, "replayed", False) for c in cut.chunk_items)
    assert [(e[0], e[1]) for e in step_content(cut)[0]] == [("message", "user"), ("message", "agent")]


@pytest.mark.parametrize("scheme", PROFILES)
async def test_a_turn_that_ended_while_the_network_was_down_reaches_the_streams_with_its_end(
    shared_server: Server, tmp_path: Path, scheme: str
) -> None:
    server = shared_server
    whole = await uncut(server, tmp_path, scheme, 2, "/slow 10")
    async with through_proxy(server, tmp_path, scheme) as (proxy, client, conversation):

        async def turn() -> None:
            running = conversation.chat("/slow 10")
            with anyio.fail_after(30):
                while reply_chunks(conversation) < 2:
                    await anyio.sleep(0.01)
            await proxy.cut_for(1.5)  # the turn's second is over before the client is back
            with anyio.fail_after(30):
                await running

        cut = await streamed(conversation, turn)
        assert client.reconnection.count == 1
    assert_same_content(cut, whole, 2, 1)
    # Everything after the marker was caught up, the turn's end included: nothing came live after it.
    after = cut.step_items[[type(i).__name__ for i in cut.step_items].index("StreamReconnected") + 1 :]
    assert after and all(step.replayed for step in after)
    assert after[-1].event.state == "idle" and after[-1].event.completed


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("scheme", PROFILES)
async def test_a_tool_call_cut_while_its_permission_is_pending_reaches_the_streams_once(
    shared_server: Server, tmp_path: Path, scheme: str, version: int
) -> None:
    server = shared_server

    async def answer_all(request: Any) -> str:
        return next(o.option_id for o in request.options if o.kind.startswith("allow"))

    async with through_proxy(server, tmp_path, scheme, builder(version).on_request_permission(answer_all)) as (
        _,
        _client,
        conversation,
    ):

        async def whole_turn() -> None:
            with anyio.fail_after(60):
                await conversation.chat("/permission")

        whole = await streamed(conversation, whole_turn)
    user = CutWhileDeciding()
    async with cutting_proxy(port_of(server)) as proxy, anyio.create_task_group() as tg:
        tg.start_soon(user.cut, proxy)
        async with builder(version).on_request_permission(user.answer).connect_url(proxy.url(scheme)) as client:
            conversation = await client.start_conversation(str(tmp_path))

            async def turn() -> None:
                with anyio.fail_after(60):
                    await conversation.chat("/permission")

            cut = await streamed(conversation, turn)
            assert client.reconnection.count == 1 and len(user.asked) == 2
    assert_same_content(cut, whole, version, 1)
    assert [kind for kind, _ in chunk_content(cut.chunk_items)[0]].count("tool_call") == 1
