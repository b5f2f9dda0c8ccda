"""A benchmark peer: an ACP endpoint on 127.0.0.1 that answers a prompt with N pre-encoded chunk updates as fast
as the socket takes them, over Streamable HTTP (SSE streams) and WebSocket, so the client's side is measured.

    python benchmarks/peers/remote_blaster.py CHUNK_FILE [--trickle]   (prints http://127.0.0.1:PORT/acp, then serves)

``--trickle``: a socket write per message (an SSE event, a WebSocket frame) instead of 1 MiB pieces, paced at about
50 000 messages a second (a busy wait after each 8), as a server that relays messages one at a time at the host's
pace does (the host's WebSocket, through ASGI): the client then finds a few messages at each wake-up.

Plain asyncio streams, just enough of HTTP/1.1 and RFC 6455 for acp-session's remote transports; not a server.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import struct
import sys
import time

with open(sys.argv[1], "rb") as chunk_file:
    CHUNKS = chunk_file.read().splitlines()
TRICKLE = "--trickle" in sys.argv[2:]
TRICKLE_BATCH, TRICKLE_SECONDS = 8, 8 / 50_000


async def write_all(writer: asyncio.StreamWriter, pieces: list[bytes], rename: bytes) -> None:
    """The turn's pieces with the prompt's message id; with ``--trickle`` each a write of its own, paced."""
    if not TRICKLE:
        for piece in pieces:
            writer.write(piece.replace(b'"reply"', rename))
            await writer.drain()
        return
    due = time.perf_counter()
    for index, piece in enumerate(pieces):
        writer.write(piece.replace(b'"reply"', rename))
        if index % TRICKLE_BATCH == TRICKLE_BATCH - 1:
            due += TRICKLE_SECONDS
            while time.perf_counter() < due:
                pass
            await writer.drain()


def pieces(records: list[bytes]) -> list[bytes]:
    """The records joined into pieces of about 1 MiB: each prompt's message id goes into one piece at a time,
    while the client reads the piece before (as ``conversation_fold.py``'s stdio agent does; renaming the whole
    turn at once kept the client waiting for about a tenth of the measured turn)."""
    out: list[bytes] = []
    current: list[bytes] = []
    size = 0
    for record in records:
        current.append(record)
        size += len(record)
        if size >= 1 << 20:
            out.append(b"".join(current))
            current, size = [], 0
    return [*out, b"".join(current)] if current else out


SSE_LINES = [b"data: " + line + b"\n\n" for line in CHUNKS]
SSE_PIECES = pieces(SSE_LINES)
STREAMS: dict[str | None, asyncio.StreamWriter] = {}
READY: dict[str | None, asyncio.Event] = {}


def note(update: dict) -> bytes:
    return json.dumps(
        {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "bench", "update": update}}
    ).encode()


def answers(msg: dict) -> tuple[str | None, list[bytes], bytes]:
    """(the stream, the messages before the chunks, what replaces the chunks' message id) for one request."""
    method, rid = msg.get("method"), msg.get("id")
    if method == "initialize":
        result = {"protocolVersion": 2, "info": {"name": "blaster", "version": "1"}, "capabilities": {"session": {}}}
        return None, [json.dumps({"jsonrpc": "2.0", "id": rid, "result": result}).encode()], b""
    if method == "session/new":
        return None, [json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"sessionId": "bench"}}).encode()], b""
    if method == "session/prompt":
        mid = f"u{rid}"
        head = [
            json.dumps({"jsonrpc": "2.0", "id": rid, "result": {"messageId": mid}}).encode(),
            note({"sessionUpdate": "user_message", "messageId": mid, "content": msg["params"]["prompt"]}),
            note({"sessionUpdate": "state_update", "state": "running"}),
        ]
        return "bench", head, b'"r%04d"' % rid  # as long as '"reply"': the frames' lengths hold
    return None, [], b""


def idle() -> bytes:
    return note({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})


async def read_head(reader: asyncio.StreamReader) -> tuple[str, dict[str, str], bytes] | None:
    try:
        head = await reader.readuntil(b"\r\n\r\n")
    except (asyncio.IncompleteReadError, ConnectionError):
        return None
    lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return lines[0].split(" ")[0], headers, body


async def http(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    while (request := await read_head(reader)) is not None:
        method, headers, body = request
        if headers.get("upgrade", "").lower() == "websocket":
            await websocket(reader, writer, headers)
            return
        if method == "GET":
            session = headers.get("acp-session-id")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n")
            STREAMS[session] = writer
            READY.setdefault(session, asyncio.Event()).set()
            return  # the stream stays open; what it carries is written by the POSTs
        if method == "DELETE":
            writer.write(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
            continue
        msg = json.loads(body)
        stream, messages, rename = answers(msg)
        if msg.get("method") == "initialize":
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nAcp-Connection-Id: c1\r\n"
                b"Content-Length: %d\r\n\r\n%s" % (len(messages[0]), messages[0])
            )
            continue
        writer.write(b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")
        await writer.drain()
        if messages:
            await READY.setdefault(stream, asyncio.Event()).wait()
            out = STREAMS[stream]
            out.write(b"".join(b"data: " + m + b"\n\n" for m in messages))
            if rename:
                await write_all(out, SSE_LINES if TRICKLE else SSE_PIECES, rename)
                out.write(b"data: " + idle() + b"\n\n")
            await out.drain()


def frame(payload: bytes) -> bytes:
    size = len(payload)
    if size < 126:
        return bytes([0x81, size]) + payload
    if size < 65536:
        return bytes([0x81, 126]) + struct.pack("!H", size) + payload
    return bytes([0x81, 127]) + struct.pack("!Q", size) + payload


async def websocket(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, headers: dict[str, str]) -> None:
    accept = base64.b64encode(
        hashlib.sha1((headers["sec-websocket-key"] + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()
    )
    writer.write(
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Accept: " + accept + b"\r\nAcp-Connection-Id: c1\r\n\r\n"
    )
    frames = [frame(line) for line in CHUNKS]
    frame_pieces = frames if TRICKLE else pieces(frames)
    while True:
        try:
            first, second = await reader.readexactly(2)
        except (asyncio.IncompleteReadError, ConnectionError):
            return
        size = second & 0x7F
        if size == 126:
            size = struct.unpack("!H", await reader.readexactly(2))[0]
        elif size == 127:
            size = struct.unpack("!Q", await reader.readexactly(8))[0]
        mask = await reader.readexactly(4)
        data = bytes(b ^ mask[i % 4] for i, b in enumerate(await reader.readexactly(size)))
        if first & 0x0F == 0x8:  # close
            writer.write(b"\x88\x00")
            await writer.drain()
            return
        if first & 0x0F != 0x1:
            continue
        _, messages, rename = answers(json.loads(data))
        writer.write(b"".join(frame(m) for m in messages))
        if rename:
            await write_all(writer, frame_pieces, rename)
            writer.write(frame(idle()))
        await writer.drain()


async def main() -> None:
    server = await asyncio.start_server(http, "127.0.0.1", 0, limit=1 << 26)
    print(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/acp", flush=True)
    async with server:
        await server.serve_forever()


asyncio.run(main())
