"""A read's many messages handed over at once: a run of SSE events or a read's WebSocket messages as one block that
the rpc layer decodes in one call, with the per-message path kept for whatever a block cannot hold (an answer
routing must see, a message over several lines, one that is not UTF-8 or too large), on real sockets."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from anyio.abc import ByteStream

from acp_session import ClientBuilder
from acp_session.transport.framing import LineBlock, OversizedFrame, expand_blocks, lines_in, split_block
from acp_session.transport.remote import RemoteLimits
from acp_session.transport.remote.inbox import BatchInbox
from acp_session.transport.remote.limits import notifications_trickle
from acp_session.transport.remote.websocket import _as_block

from .hostile import Request, Served, initialize_answer, send, serve, ws_accept, ws_read_text, ws_text

pytestmark = pytest.mark.anyio

EVENTS_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"
ACCEPTED = b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"
LIMITS = RemoteLimits(max_message=4096, response_timeout=10.0, connect_timeout=10.0)


def note(n: int) -> bytes:
    """A notification nobody handles (an extension method): read, classified, dropped."""
    return b'{"jsonrpc":"2.0","method":"_bulk/note","params":{"n":%d}}' % n


def answer(request_id: Any, session: str) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"sessionId": session}}).encode()


def sse_server(burst: Any) -> Any:
    """Answers initialize; on the connection's stream, once session/new is posted, writes ``burst(its id)`` at once
    (the session/new answer among other events); a session's stream stays open and silent."""
    posted: list[Any] = []
    wrote = anyio.Event()

    async def handle(stream: ByteStream, request: Request, served: Served, _: bytearray) -> bool:
        if request.method == "POST" and request.json().get("method") == "initialize":
            await send(stream, served, initialize_answer(request))
            return True
        if request.method == "POST":
            await send(stream, served, ACCEPTED)
            if request.json().get("method") == "session/new":
                posted.append(request.json()["id"])
            return True
        if request.method == "GET" and "acp-session-id" in request.headers:
            await send(stream, served, EVENTS_HEAD)
            await anyio.sleep(30)
        elif request.method == "GET":
            await send(stream, served, EVENTS_HEAD)
            while not posted:
                await anyio.sleep(0.005)
            await send(stream, served, burst(posted[0]))
            wrote.set()
            await anyio.sleep(30)
        return False

    return handle


def events(*messages: bytes) -> bytes:
    return b"".join(b"data: " + message + b"\n\n" for message in messages)


async def test_an_answer_inside_a_run_of_events_is_routed() -> None:
    """A run of single-line events with an answer in it: the answer routes as alone (it opens its session's
    stream) and the notifications around it are read, none of them reported as bad."""

    def burst(request_id: Any) -> bytes:
        return events(*(note(n) for n in range(8)), answer(request_id, "bulk-1"), *(note(n) for n in range(8, 16)))

    async with serve(sse_server(burst)) as served:
        with anyio.fail_after(20):
            async with ClientBuilder().connect_url(served.url, limits=LIMITS) as client:
                conversation = await client.start_conversation("/")
                assert conversation.session_id == "bulk-1"
                assert client.rpc.bad_frames == 0
                while client.rpc.frames_read < 18:  # initialize's answer, the 16 notes, session/new's answer
                    await anyio.sleep(0.01)
    gets = [r.headers.get("acp-session-id") for r in served.requests if r.method == "GET"]
    assert gets == [None, "bulk-1"]


async def test_a_request_inside_a_run_on_a_session_stream_is_answered_on_that_session() -> None:
    """A block's events are routed when the rpc layer splits it: an agent's request among notifications on a
    session's stream is answered with that session's ``Acp-Session-Id`` (the answer route noted on the split)."""
    answered = anyio.Event()
    burst = events(*(note(n) for n in range(6)), b'{"jsonrpc":"2.0","id":"ask-1","method":"_bulk/ask"}', note(6))

    async def handle(stream: ByteStream, request: Request, served: Served, _: bytearray) -> bool:
        if request.method == "POST" and request.json().get("method") == "initialize":
            await send(stream, served, initialize_answer(request))
            return True
        if request.method == "POST":
            await send(stream, served, ACCEPTED)
            message = request.json()
            if message.get("method") == "session/new":
                connection_stream = streams[None]
                await send(connection_stream, served, events(answer(message["id"], "bulk-3")))
            if message.get("id") == "ask-1":
                answered.set()
            return True
        session = request.headers.get("acp-session-id")
        streams[session] = stream
        await send(stream, served, EVENTS_HEAD)
        if session is not None:
            await send(stream, served, burst)
        await anyio.sleep(30)
        return False

    streams: dict[str | None, ByteStream] = {}
    async with serve(handle) as served:
        with anyio.fail_after(20):
            async with ClientBuilder().connect_url(served.url, limits=LIMITS) as client:
                await client.new_session("/")
                await answered.wait()
    (post,) = [r for r in served.requests if r.method == "POST" and r.json().get("id") == "ask-1"]
    assert post.json()["error"]["code"] == -32601  # nobody handles the method
    assert post.headers.get("acp-session-id") == "bulk-3"


async def test_an_event_that_is_not_utf8_inside_a_run_is_reported_alone() -> None:
    def burst(request_id: Any) -> bytes:
        bad = b'{"jsonrpc":"2.0","method":"_bulk/note","params":{"text":"\xff\xfe"}}'
        return events(note(0), note(1), bad, note(2), note(3), answer(request_id, "bulk-2"), note(4))

    async with serve(sse_server(burst)) as served:
        with anyio.fail_after(20):
            async with ClientBuilder().connect_url(served.url, limits=LIMITS) as client:
                conversation = await client.start_conversation("/")
                assert conversation.session_id == "bulk-2"
                while client.rpc.frames_read < 8:
                    await anyio.sleep(0.01)
                assert client.rpc.bad_frames == 1
                assert not client.rpc.closed


def ws_server(burst: Any) -> Any:
    """Answers initialize over the WebSocket; then, for session/new, writes ``burst(its id)`` in one write."""

    async def handle(stream: ByteStream, request: Request, served: Served, buffer: bytearray) -> bool:
        await send(stream, served, ws_accept(request))
        initialize = Request("WS", {}, await ws_read_text(stream, buffer))
        await send(stream, served, ws_text(initialize_answer(initialize).partition(b"\r\n\r\n")[2]))
        while True:
            message = json.loads(await ws_read_text(stream, buffer))
            if message.get("method") == "session/new":
                await send(stream, served, burst(message["id"]))
                break
        await anyio.sleep(30)
        return False

    return handle


async def _bad_frames_of(burst: Any, session_id: str) -> int:
    """A WebSocket client's bad frames once it read the seven of ``burst`` (initialize's answer first), after its
    ``session/new`` came back with ``session_id``."""
    async with serve(ws_server(burst)) as served:
        with anyio.fail_after(20):
            url = served.url.replace("http://", "ws://")
            async with ClientBuilder().connect_url(url, limits=LIMITS) as client:
                conversation = await client.start_conversation("/")
                assert conversation.session_id == session_id
                while client.rpc.frames_read < 7:
                    await anyio.sleep(0.01)
                return client.rpc.bad_frames


async def test_a_websocket_read_with_a_message_over_several_lines_is_delivered_message_by_message() -> None:
    """One read of many text frames, the answer among them pretty-printed (JSON may spread over lines; a text
    frame may carry that): no block can hold it, and every message arrives whole."""

    def burst(request_id: Any) -> bytes:
        spread = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"sessionId": "ws-1"}}, indent=2).encode()
        assert b"\n" in spread
        return b"".join(ws_text(m) for m in [note(0), note(1), note(2), spread, note(3), note(4)])

    assert await _bad_frames_of(burst, "ws-1") == 0


async def test_a_websocket_read_with_an_oversized_message_reports_it_and_delivers_the_rest() -> None:
    def burst(request_id: Any) -> bytes:
        big = b'{"jsonrpc":"2.0","method":"_bulk/note","params":{"text":"' + b"x" * 5000 + b'"}}'
        messages = [note(0), note(1), big, note(2), answer(request_id, "ws-2"), note(3)]
        return b"".join(ws_text(m) for m in messages)

    assert await _bad_frames_of(burst, "ws-2") == 1


def test_a_websocket_block_only_of_single_line_messages() -> None:
    messages = [note(n) for n in range(5)]
    block = _as_block(list(messages))
    assert isinstance(block, LineBlock) and block.count == 5 and block.data == b"\n".join(messages) + b"\n"
    assert _as_block([*messages, b'{"a":\n1}']) is None  # a message over two lines
    assert _as_block([*messages, OversizedFrame(10)]) is None


def test_a_block_calls_its_split_hook_once_with_its_lines() -> None:
    """The HTTP profile notes the routing facts of a block's events when it is split (the rpc layer could not
    decode it whole), once, whoever splits it first."""
    seen: list[list[bytes]] = []
    block = LineBlock(b"{}\n[]\n", 2, seen.append)
    assert split_block(block) == [b"{}", b"[]"]
    assert expand_blocks([block]) == [b"{}", b"[]"]
    assert seen == [[b"{}", b"[]"]]


def test_lines_in_counts_every_block_of_a_batch() -> None:
    frames = [b"{}", LineBlock(b"{}\n{}\n{}\n{}\n", 4), b"{}", LineBlock(b"{}\n" * 5, 5)]
    assert lines_in(frames) == 11  # type: ignore[arg-type]  # list is invariant


async def test_the_inbox_counts_a_block_as_its_messages() -> None:
    """A block of a read's messages counts as that many against ``inbox_frames``: the reader waits after it."""
    inbox = BatchInbox[object](8)
    progress: list[str] = []

    async def reader() -> None:
        await inbox.put_all(["block"], 10)  # one item, ten messages: past the limit
        progress.append("queued")

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        await anyio.wait_all_tasks_blocked()
        assert progress == []
        assert await inbox.take() == ["block"]
        await anyio.wait_all_tasks_blocked()
        assert progress == ["queued"]


def test_what_counts_as_a_trickle_of_notifications() -> None:
    assert notifications_trickle(events(note(1), note(2)))
    assert not notifications_trickle(events(note(1), answer(3, "s")))  # an answer: read on at once
    assert not notifications_trickle(events(*(note(n) for n in range(400))))  # a large read: no pause needed
    with pytest.raises(ValueError, match="stream_pause"):
        RemoteLimits(stream_pause=-1)
