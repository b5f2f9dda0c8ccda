"""Framing lives in the transport: the rpc layer gets and gives whole messages, whatever the wire delimits them by.

A message-framed transport (whole frames over anyio memory object streams, no newline anywhere) carries a full
JSON-RPC exchange through ``Connection``; newline framing (``LineFrames``, ``PipeFrames``) is tested on its own.
"""

from __future__ import annotations

import json
import os
import select
import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import msgspec
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from acp_session.errors import AcpError, MessageTooLarge, ParseError, ResourceNotFound
from acp_session.rpc import Connection
from acp_session.transport import (
    FastPathTransport,
    Frame,
    FrameTransport,
    InvalidUtf8Frame,
    LineFrames,
    OversizedFrame,
    PeerExit,
    frame_transport,
    memory_pair,
    stdio_agent,
)
from acp_session.transport.framing import check_utf8, encode_frames
from acp_session.transport.pipe import PipeFrames, open_pipe, open_stdin_pipe
from tests.helpers.raw_end import helper

pytestmark = pytest.mark.anyio


class MessageTransport:
    """A third-party style message transport: one frame per message over memory object streams (think
    WebSocket). It knows nothing of newlines, and nothing of the library beyond the ``FrameTransport`` shape."""

    def __init__(self, send: MemoryObjectSendStream[Frame], receive: MemoryObjectReceiveStream[Frame]) -> None:
        self._send = send
        self._receive = receive
        self.sent: list[bytes] = []

    async def receive_frames(self) -> list[Frame]:
        frames = [await self._receive.receive()]
        while True:  # whatever else is already there comes in the same block
            try:
                frames.append(self._receive.receive_nowait())
            except anyio.WouldBlock:
                return frames

    async def send_frames(self, frames: list[bytes]) -> None:
        for frame in frames:
            self.sent.append(frame)
            await self._send.send(frame)

    async def aclose(self) -> None:
        self._send.close()
        self._receive.close()

    async def peer_exit(self) -> PeerExit:
        return PeerExit()


def message_pair() -> tuple[MessageTransport, MessageTransport]:
    a_send, b_receive = anyio.create_memory_object_stream[Frame](100)
    b_send, a_receive = anyio.create_memory_object_stream[Frame](100)
    return MessageTransport(a_send, a_receive), MessageTransport(b_send, b_receive)


class Note(msgspec.Struct):
    n: int
    text: str = ""


@pytest.fixture
async def message_peers() -> AsyncIterator[tuple[Connection, Connection, MessageTransport, MessageTransport]]:
    ours, theirs = message_pair()
    async with Connection(ours) as client, Connection(theirs) as agent:
        yield client, agent, ours, theirs


async def test_a_message_framed_transport_plugs_in_as_it_is(message_peers: Any) -> None:
    client, agent, ours, theirs = message_peers
    assert isinstance(ours, FrameTransport) and not isinstance(ours, FastPathTransport)
    assert frame_transport(ours) is ours  # used as it is: no newline framing on top
    notes: list[Note] = []
    typed: list[Note] = []
    done = anyio.Event()

    def on_note(note: Note) -> None:
        typed.append(note)
        if note.n == 49:
            done.set()

    client.on_notification("note", notes.append, msgspec.json.Decoder(Note).decode)
    agent.on_notification("typed", on_note, Note)  # a Struct: the one-pass path, frames decoded in a block

    async def ask_back(params: dict[str, Any]) -> dict[str, Any]:
        await agent.notify("note", Note(0, "before the answer"))
        # The agent calls the client while answering the client: both directions on one pair.
        answer = await agent.request("client/lookup", {"key": params["key"]})
        return {"echo": params, "client_said": answer}

    def missing(_: Any) -> None:
        raise ResourceNotFound(message="no such thing", data={"key": "k"})

    agent.on_request("ask", ask_back)
    agent.on_request("missing", missing)
    client.on_request("client/lookup", lambda p: {"found": p["key"].upper()})

    result = await client.request("ask", {"key": "line\nbreak"})
    assert result == {"echo": {"key": "line\nbreak"}, "client_said": {"found": "LINE\nBREAK"}}
    assert notes == [Note(0, "before the answer")]  # delivered before the answer that followed it
    with pytest.raises(ResourceNotFound) as info:
        await client.request("missing")
    assert info.value.data == {"key": "k"}
    for n in range(50):
        await client.notify("typed", Note(n, "ü"))
    with anyio.fail_after(2):
        await done.wait()
    assert [note.n for note in typed] == list(range(50)) and typed[0].text == "ü"
    for frame in ours.sent + theirs.sent:
        assert b"\n" not in frame  # whole messages, never a newline: framing is the transport's business
        msgspec.json.decode(frame)  # and each one exactly one JSON message


async def test_markers_from_a_message_transport_are_reported_and_answered() -> None:
    ours, theirs = message_pair()
    errors: list[AcpError] = []
    async with Connection(ours, on_frame_error=errors.append) as conn:
        conn.on_request("ping", lambda _: "pong")
        await theirs.send_frames([])  # nothing at all is fine too
        await theirs._send.send(InvalidUtf8Frame(b'{"jsonrpc":"2.0","id":1,"method":"ping","x":"\xff"}'))
        await theirs._send.send(OversizedFrame(10_000_000))
        await theirs._send.send(b'{"jsonrpc":"2.0","id":2,"method":"ping"}')
        replies: list[Any] = []
        with anyio.fail_after(2):
            while len(replies) < 2:
                replies += [json.loads(frame) for frame in await theirs.receive_frames()]  # type: ignore[arg-type]
    assert replies == [
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}},
        {"jsonrpc": "2.0", "id": 2, "result": "pong"},
    ]
    assert [type(error) for error in errors] == [ParseError, MessageTooLarge]


async def test_line_frames_deliver_whole_lines_across_reads_and_a_last_line_without_newline() -> None:
    ours, theirs = memory_pair()
    frames = LineFrames(ours, max_frame_size=64)
    await theirs.send(b'{"a":1}\n{"b"')
    assert await frames.receive_frames() == [b'{"a":1}']
    await theirs.send(b":2}\n" + b"x" * 100 + b"\n\xff\xfe\n")
    got = await frames.receive_frames()
    assert got == [b'{"b":2}', OversizedFrame(100), InvalidUtf8Frame(b"\xff\xfe")]
    await theirs.send(b'{"last":true}')
    await theirs.aclose()
    assert await frames.receive_frames() == [b'{"last":true}']  # the end of the stream finishes the frame
    for _ in range(2):
        with pytest.raises(anyio.EndOfStream):
            await frames.receive_frames()


def test_check_utf8_marks_only_what_is_not_text() -> None:
    assert check_utf8([b"{}", b"{}"], b"{}\n{}\n") == [b"{}", b"{}"]
    # the first frame may hold bytes from before this read: it is checked on its own
    assert check_utf8([b"\xff{}", b"{}"], b"{}\n{}\n") == [InvalidUtf8Frame(b"\xff{}"), b"{}"]
    text = "ü".encode()
    assert check_utf8([text, b"\xc3", OversizedFrame(9)], text + b"\n\xc3\n") == [
        text,
        InvalidUtf8Frame(b"\xc3"),
        OversizedFrame(9),
    ]


@pytest.mark.parametrize("size", [10, 5000], ids=["short", "long"])
def test_messages_with_raw_line_breaks_still_make_one_line_each(size: int) -> None:
    """Only a ``msgspec.Raw`` value can put a raw line break into an encoded message; both ways of looking for
    one (``splitlines`` for short frames, a ``memchr`` search for long ones) must find it."""
    message = msgspec.json.encode({"pad": "x" * size, "raw": msgspec.Raw(b'{\r\n "a": 1\n}')})
    for data in (encode_frames([message]), encode_frames([message, b"{}", message])):
        lines = data.split(b"\n")
        assert lines.pop() == b"" and b"\r" not in data
        assert json.loads(lines[0]) == {"pad": "x" * size, "raw": {"a": 1}}
        assert [json.loads(line) for line in lines][1:] in ([], [{}, {"pad": "x" * size, "raw": {"a": 1}}])


async def test_pipe_frames_send_nowait_writes_whole_frames_or_nothing() -> None:
    writer, read_fd = open_stdin_pipe()
    reader, write_fd = open_pipe()
    os.set_blocking(read_fd, False)
    frames = PipeFrames(reader, writer, memory_pair()[0])
    try:
        assert isinstance(frames, FastPathTransport)
        assert frames.send_nowait(b'{"a":1}')
        assert os.read(read_fd, 100) == b'{"a":1}\n'
        raw = msgspec.json.encode({"raw": msgspec.Raw(b"{\n}")})
        big = b'{"pad":"' + b"x" * select.PIPE_BUF + b'"}'
        long = b'{"pad":"' + b"y" * 3000 + b'"}'  # longer than SHORT_FRAME: searched with ``in``
        assert frames.send_nowait(long)
        assert os.read(read_fd, 1 << 16) == long + b"\n"
        for declined in (raw, big, b'{"a":1}\n', b'{"a":1}\r', long[:-2] + b'\n"}', b""):
            assert not frames.send_nowait(declined)  # left for send_frames, which frames it properly
        with pytest.raises(BlockingIOError):
            os.read(read_fd, 100)  # nothing of those was written
        await frames.send_frames([raw, big])
        data = b""
        while data.count(b"\n") < 2:
            data += os.read(read_fd, 1 << 16)
        first, second, rest = data.split(b"\n")
        assert json.loads(first) == {"raw": {}} and json.loads(second)["pad"] == "x" * select.PIPE_BUF and not rest
    finally:
        await writer.aclose()
        await reader.aclose()
        os.close(read_fd)
        os.close(write_fd)


async def test_an_agent_pipe_gets_the_fast_paths_and_raw_line_breaks_arrive_as_one_line() -> None:
    async with stdio_agent(helper("raw_agent.py")) as agent, Connection(agent) as conn:
        assert isinstance(conn._frames, FastPathTransport)
        params = {"pad": "x" * 3000, "raw": msgspec.Raw(b'{\r\n "a": 1\n}')}
        assert await conn.request("echo", params) == {"pad": "x" * 3000, "raw": {"a": 1}}
        assert await conn.request("echo", {"small": msgspec.Raw(b"[1,\n2]")}) == {"small": [1, 2]}


async def test_a_byte_transport_gets_newline_framing() -> None:
    ours, _ = memory_pair()
    assert isinstance(frame_transport(ours), LineFrames)
    if sys.platform != "win32":
        async with stdio_agent(helper("raw_agent.py")) as agent:
            assert isinstance(frame_transport(agent), PipeFrames)
