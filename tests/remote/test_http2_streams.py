"""HTTP/2 with several event streams open: a POST's answer and an event on one stream arrive while the other
streams wait, even from a server that sends nothing else (no keep-alive to wake a stalled reader).

The server is a few lines over ``h2`` on a real socket (h2c, prior knowledge): it answers initialize, answers
every other POST 202, holds each GET's event stream open and sends on it only when the test says so. Before the
fix the client's streams and POSTs shared one HTTP/2 connection, where httpcore 1.0 left the third reader waiting
for the server's next frame (``RemoteClients`` in ``acp_session/transport/remote/client.py``): these tests then
timed out, on both backends, every time.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import h2.config
import h2.connection
import h2.events
import pytest
from anyio.abc import ByteStream, SocketAttribute

from acp_session.transport import FrameTransport
from acp_session.transport.remote import RemoteDialer, RemoteLimits

pytestmark = pytest.mark.anyio

INITIALIZE = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2}}'
INITIALIZE_RESULT = {"protocolVersion": 2, "info": {"name": "h2", "version": "0"}, "capabilities": {"session": {}}}
LIMITS = RemoteLimits(response_timeout=30.0, connect_timeout=5.0)


def cancel(session: str) -> bytes:
    """A notification naming ``session``: sending it opens that session's stream first."""
    return json.dumps({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": session}}).encode()


@dataclass
class H2Served:
    url: str
    streams: dict[str | None, Callable[[bytes], Awaitable[None]]] = field(default_factory=dict)
    """Event streams by session (None: the connection's): send one SSE event on it."""
    posts: list[dict[str, Any]] = field(default_factory=list)
    connections: int = 0


@asynccontextmanager
async def serve_h2() -> AsyncIterator[H2Served]:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    served = H2Served(f"http://127.0.0.1:{listener.extra(SocketAttribute.local_port)}/acp")

    async def connection(stream: ByteStream) -> None:
        served.connections += 1
        h2c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        h2c.initiate_connection()
        lock = anyio.Lock()

        async def flush() -> None:
            async with lock:
                data = h2c.data_to_send()
                if data:
                    await stream.send(data)

        def answer(stream_id: int, headers: dict[str, str], body: bytes) -> None:
            method = headers[":method"]
            if method == "GET":
                h2c.send_headers(stream_id, [(":status", "200"), ("content-type", "text/event-stream")])

                async def push(data: bytes, stream_id: int = stream_id) -> None:
                    h2c.send_data(stream_id, b"data: " + data + b"\n\n")
                    await flush()

                served.streams[headers.get("acp-session-id")] = push
                return
            if method == "POST" and "acp-connection-id" not in headers:
                message = json.loads(body)
                result = {"jsonrpc": "2.0", "id": message["id"], "result": INITIALIZE_RESULT}
                payload = json.dumps(result).encode()
                reply = [(":status", "200"), ("content-type", "application/json"), ("acp-connection-id", "h2-1")]
                h2c.send_headers(stream_id, [*reply, ("content-length", str(len(payload)))])
                h2c.send_data(stream_id, payload, end_stream=True)
                return
            if method == "POST":
                served.posts.append(json.loads(body))
            h2c.send_headers(stream_id, [(":status", "202")], end_stream=True)

        requests: dict[int, tuple[dict[str, str], bytearray]] = {}
        try:
            await flush()
            while True:
                data = await stream.receive()
                for event in h2c.receive_data(data):
                    if isinstance(event, h2.events.RequestReceived):
                        requests[event.stream_id] = (dict(event.headers or []), bytearray())  # type: ignore[arg-type]
                    elif isinstance(event, h2.events.DataReceived) and event.stream_id in requests:
                        requests[event.stream_id][1].extend(event.data or b"")
                        h2c.acknowledge_received_data(event.flow_controlled_length or 0, event.stream_id)
                    elif isinstance(event, h2.events.StreamEnded) and event.stream_id in requests:
                        headers, body = requests.pop(event.stream_id)
                        answer(event.stream_id, headers, bytes(body))
                await flush()
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            pass  # the client hung up

    async with anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, connection)
        try:
            yield served
        finally:
            tg.cancel_scope.cancel()


@asynccontextmanager
async def initialized() -> AsyncIterator[tuple[H2Served, FrameTransport]]:
    """The server, and a transport to it that has sent initialize (and opened the connection's stream)."""
    async with serve_h2() as served, RemoteDialer(served.url, http_version="2", limits=LIMITS).open() as transport:
        with anyio.fail_after(10):
            await transport.send_frames([INITIALIZE])
            (answer,) = await transport.receive_frames()
        assert isinstance(answer, bytes) and json.loads(answer)["result"]["info"]["name"] == "h2"
        yield served, transport


async def test_posts_are_answered_while_the_event_streams_wait() -> None:
    async with initialized() as (served, transport):
        for n in range(3):
            # The connection's stream and s1's wait and the server sends nothing but the 202: before the fix one
            # stream read the POST's answer for it, and the other then held the POST up for good.
            with anyio.fail_after(5):
                await transport.send_frames([cancel("s1")])
            assert len(served.posts) == n + 1
        assert set(served.streams) == {None, "s1"}
        assert served.connections == 3  # the POSTs' and one for each stream


async def test_an_event_reaches_its_stream_while_two_others_wait() -> None:
    async with initialized() as (served, transport):
        with anyio.fail_after(5):
            await transport.send_frames([cancel("s1")])
            await transport.send_frames([cancel("s2")])
        assert set(served.streams) == {None, "s1", "s2"}
        for session in ("s2", "s1", None, "s2"):
            update = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": session or "-"}}
            await served.streams[session](json.dumps(update).encode())
            with anyio.fail_after(5):  # nothing else comes: the event must not wait for another stream's next read
                (frame,) = await transport.receive_frames()
            assert isinstance(frame, bytes) and json.loads(frame) == update
