"""``IncomingConnection.send_notifications``: a relay's encoded notifications put on a session's SSE stream in one
piece are byte for byte the events their frames make through the transport (routed one by one, each rendered by
``sse_event``), line breaks in the params included; over WebSocket the frames are those the rpc layer writes, in one
burst; once the connection ended it raises as the transport does. ``rpc.Connection.queued_written`` returns once
the frames queued before it are with the transport, so what the caller sends next comes after them."""

from __future__ import annotations

import anyio
import msgspec
import pytest

from acp_session.rpc import Connection
from acp_session.server.connection import RemoteConnection, render_events

pytestmark = pytest.mark.anyio

PREFIX = b'{"jsonrpc":"2.0","method":"session/update","params":'


def params(n: int, *, line_breaks: bool = False) -> list[bytes]:
    out = []
    for i in range(n):
        update = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": f"tok\u00e9n {i}"}}
        encoded = msgspec.json.encode({"sessionId": "s1", "update": update})
        if line_breaks and i % 3 == 0:
            encoded = encoded.replace(b'{"type"', b'{\r\n  "type"')  # JSON still, with line breaks between tokens
        out.append(encoded)
    return out


async def written(conn: RemoteConnection) -> bytes:
    """Everything the session's stream holds, as its reader would write it."""
    stream = conn.session_stream("s1")
    out = b""
    while True:
        frames = await stream.take(0.05)
        if frames is None:
            return out
        out += render_events(frames)


@pytest.mark.parametrize("line_breaks", [False, True])
async def test_the_events_are_those_of_the_frames_routed_one_by_one(line_breaks: bool) -> None:
    batch = params(300, line_breaks=line_breaks)
    one_by_one = RemoteConnection()
    await one_by_one.incoming.transport.send_frames([PREFIX + encoded + b"}" for encoded in batch])
    at_once = RemoteConnection()
    await at_once.incoming.send_notifications("s1", "session/update", batch)
    expected = await written(one_by_one)
    assert expected.count(b"data: ") == 300
    assert await written(at_once) == expected
    assert not at_once.connection_stream._queue  # nothing on the connection's own stream


async def test_over_websocket_the_frames_are_those_the_rpc_layer_writes() -> None:
    batch = params(300, line_breaks=True)
    written: list[list[bytes]] = []

    async def sink(frames: list[bytes]) -> None:
        written.append(frames)

    async with Connection(RemoteConnection(sink).incoming.transport, peer_name="client") as rpc:
        await rpc.notify_encoded("session/update", batch)
        await rpc.queued_written()
    one_by_one = [frame for frames in written for frame in frames]
    written.clear()
    await RemoteConnection(sink).incoming.send_notifications("s1", "session/update", batch)
    assert written == [one_by_one] and len(one_by_one) == 300


async def test_after_the_end_it_raises() -> None:
    conn = RemoteConnection()
    conn.end()
    conn.ended.set()
    with pytest.raises(anyio.BrokenResourceError):
        await conn.incoming.send_notifications("s1", "session/update", params(2))


async def test_what_the_rpc_layer_queued_goes_first() -> None:
    conn = RemoteConnection()
    async with Connection(conn.incoming.transport, peer_name="client") as rpc:
        for i in range(50):
            await rpc.notify("session/update", {"sessionId": "s1", "update": {"n": i}})
        await rpc.queued_written()
        await conn.incoming.send_notifications("s1", "session/update", [b'{"sessionId":"s1","update":{"n":50}}'])
        events = await written(conn)
    numbers = [msgspec.json.decode(line[6:])["params"]["update"]["n"] for line in events.split(b"\n\n") if line]
    assert numbers == list(range(51))
