"""A burst of WebSocket messages in one write (``acp_session.server.wswrite``): the frames are byte for byte what
one ``websocket.send`` per message makes (wsproto's), on the wire too; with ``permessage-deflate`` negotiated, or a
test server's own frames, each message still goes alone, and the client reads them all.

The client is a real socket speaking the upgrade and the frames through wsproto (the library hypercorn uses), so
the test sees the exact bytes the server wrote."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from wsproto import WSConnection
from wsproto.connection import Connection as WsConnection
from wsproto.connection import ConnectionType
from wsproto.events import AcceptConnection, Request, TextMessage

from acp_session.server import IncomingConnection, ServerHooks, ServerOptions, open_server
from acp_session.server.wswrite import text_frame

pytestmark = pytest.mark.anyio

WAIT = 15
BURST = 300


def wsproto_frame(payload: bytes) -> bytes:
    """The frame hypercorn's own ``websocket.send`` writes for one text message (no extension)."""
    return WsConnection(ConnectionType.SERVER).send(TextMessage(data=payload.decode()))


@pytest.mark.parametrize("size", [0, 1, 125, 126, 127, 1000, 65535, 65536, 70000])
def test_a_text_frame_is_wsprotos(size: int) -> None:
    payload = (b'{"t":"' + b"x" * size + b'"}')[:size] if size else b""
    assert text_frame(payload) == wsproto_frame(payload)
    accented = ("é" * size).encode()
    assert text_frame(accented) == wsproto_frame(accented)


def burst() -> list[bytes]:
    """Messages of many sizes (short, two-byte and eight-byte lengths), some not ASCII."""
    sizes = [10, 200, 5000, 70000]
    return [
        json.dumps(
            {"jsonrpc": "2.0", "method": "_test/n", "params": {"n": n, "pad": "é" * (n % 3) + "x" * sizes[n % 4]}}
        )
        .encode()
        .replace(b" ", b"")
        for n in range(BURST)
    ]


class Burst:
    """Answers the first message with a burst of ``BURST`` messages in one ``send_frames``."""

    async def handle(self, client: IncomingConnection) -> None:
        await client.transport.receive_frames()
        await client.transport.send_frames(burst())
        await client.wait_closed()


class OwnFrames(ServerHooks):
    """A test server's frames (the same text): the per-message path, whose bytes the burst must equal."""

    def websocket_message(self, frame: bytes) -> str | bytes:
        return frame.decode("utf-8")


async def read_burst(url: str, extensions: list[Any]) -> tuple[bytes, list[str]]:
    """Upgrade, send ``initialize``, then read until ``BURST`` messages came: the raw bytes after the 101 and the
    messages wsproto read from them."""
    host, port = url.removeprefix("http://").split("/")[0].rsplit(":", 1)
    ws = WSConnection(ConnectionType.CLIENT)
    raw = bytearray()
    messages: list[str] = []
    parts: list[str] = []
    async with await anyio.connect_tcp(host, int(port)) as sock:
        await sock.send(ws.send(Request(host=host, target="/acp", extensions=extensions)))
        accepted = False
        while not accepted:
            ws.receive_data(await sock.receive())
            for event in ws.events():
                assert isinstance(event, AcceptConnection), event
                accepted = True
        initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 2}}
        await sock.send(ws.send(TextMessage(data=json.dumps(initialize))))
        with anyio.fail_after(WAIT):
            while len(messages) < BURST:
                data = await sock.receive()
                raw += data
                ws.receive_data(data)
                for event in ws.events():
                    assert isinstance(event, TextMessage), event
                    parts.append(event.data)
                    if event.message_finished:
                        messages.append("".join(parts))
                        parts.clear()
    return bytes(raw), messages


async def test_a_burst_is_written_as_one_send_per_message_would_write_it() -> None:
    expected = [frame.decode() for frame in burst()]
    async with open_server(Burst().handle, ServerOptions()) as server:
        bulk, messages = await read_burst(server.url, [])
    assert messages == expected
    async with open_server(Burst().handle, ServerOptions(hooks=OwnFrames())) as server:
        one_by_one, messages = await read_burst(server.url, [])
    assert messages == expected
    assert bulk == one_by_one == b"".join(wsproto_frame(frame) for frame in burst())


async def test_with_permessage_deflate_each_message_is_compressed_and_read() -> None:
    from wsproto.extensions import PerMessageDeflate

    async with open_server(Burst().handle, ServerOptions()) as server:
        raw, messages = await read_burst(server.url, [PerMessageDeflate()])
    assert messages == [frame.decode() for frame in burst()]
    assert len(raw) < sum(map(len, burst())) / 4  # compressed: the per-message path (wsproto) made these frames


def test_hypercorns_websocket_stream_is_recognised() -> None:
    """The bulk path needs hypercorn's own ``WSStream.app_send`` (and the attributes it reads): checked on the
    installed hypercorn, so an upgrade that moves them is seen here rather than as a silent fallback (whose bytes
    the test above cannot tell apart)."""
    from hypercorn.config import Config
    from hypercorn.protocol.ws_stream import WSStream

    from acp_session.server.wswrite import FrameWriter

    async def send(event: Any) -> None:
        pass

    stream = WSStream(None, Config(), None, None, False, None, None, send, 1)  # type: ignore[arg-type]
    stream.connection = WsConnection(ConnectionType.SERVER)  # what its accept sets (a FrameWriter comes after it)
    assert FrameWriter(stream.app_send, ServerHooks())._under is not None
    assert FrameWriter(stream.app_send, OwnFrames())._under is None  # a test server's frames: one by one
    assert FrameWriter(send, ServerHooks())._under is None  # another ASGI server: one by one
