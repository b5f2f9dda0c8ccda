"""Small hand-written servers for the hostile-server tests: just enough HTTP/1.1 (and a WebSocket handshake) to
reach the client's limits, each on 127.0.0.1 port 0, counting what they sent."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import struct
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import ByteStream, SocketAttribute

__all__ = [
    "Request",
    "Served",
    "initialize_answer",
    "read_request",
    "send",
    "serve",
    "ws_accept",
    "ws_read_text",
    "ws_text",
]

INITIALIZE_RESULT = {"protocolVersion": 2, "info": {"name": "hostile", "version": "0"}, "capabilities": {"session": {}}}


@dataclass
class Request:
    method: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Served:
    url: str
    sent: int = 0  # bytes written by the handlers
    requests: list[Request] = field(default_factory=list)


Handler = Callable[[ByteStream, Request, Served, bytearray], Awaitable[bool]]
"""(stream, request, served, unread bytes) -> True to keep the connection for another request."""


async def read_request(stream: ByteStream, buffer: bytearray) -> Request | None:
    while b"\r\n\r\n" not in buffer:
        try:
            buffer += await stream.receive()
        except (anyio.EndOfStream, anyio.BrokenResourceError, anyio.ClosedResourceError):
            return None
    head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
    buffer[:] = rest
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    length = int(headers.get("content-length", "0"))
    while len(buffer) < length:
        buffer += await stream.receive()
    body = bytes(buffer[:length])
    del buffer[:length]
    return Request(lines[0].split(" ")[0], headers, body)


def initialize_answer(request: Request, connection_id: str = "hostile-1") -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": request.json()["id"], "result": INITIALIZE_RESULT}).encode()
    return (
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nAcp-Connection-Id: "
        + connection_id.encode()
        + b"\r\nContent-Length: %d\r\n\r\n" % len(body)
        + body
    )


@asynccontextmanager
async def serve(handler: Handler, *, tls: Any = None) -> AsyncIterator[Served]:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
    port = listener.extra(SocketAttribute.local_port)
    served = Served(f"{'https' if tls else 'http'}://127.0.0.1:{port}/acp")

    async def connection(stream: ByteStream) -> None:
        buffer = bytearray()
        try:
            if tls is not None:
                from anyio.streams.tls import TLSStream

                stream = await TLSStream.wrap(stream, ssl_context=tls, server_side=True)
            while True:
                request = await read_request(stream, buffer)
                if request is None:
                    return
                served.requests.append(request)
                if not await handler(stream, request, served, buffer):
                    return
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.EndOfStream, OSError):
            pass  # the client hung up: what these servers are for
        except Exception as exc:  # a TLS handshake the client refused, ...
            if "ssl" not in type(exc).__module__.lower() and "SSL" not in type(exc).__name__:
                raise
        finally:
            with contextlib.suppress(Exception):  # a TLS close to a client already gone
                await stream.aclose()

    async with anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, connection)
        try:
            yield served
        finally:
            tg.cancel_scope.cancel()


async def send(stream: ByteStream, served: Served, data: bytes) -> None:
    await stream.send(data)
    served.sent += len(data)


def ws_accept(request: Request, connection_id: str = "hostile-ws") -> bytes:
    key = request.headers["sec-websocket-key"]
    accept = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest())
    return (
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        b"Sec-WebSocket-Accept: " + accept + b"\r\nAcp-Connection-Id: " + connection_id.encode() + b"\r\n\r\n"
    )


def ws_text(payload: bytes, *, length: int | None = None) -> bytes:
    """A server's text frame header (and payload): ``length`` announces more than ``payload`` when given."""
    size = len(payload) if length is None else length
    if size < 126:
        header = bytes([0x81, size])
    elif size < 65536:
        header = bytes([0x81, 126]) + struct.pack("!H", size)
    else:
        header = bytes([0x81, 127]) + struct.pack("!Q", size)
    return header + payload


async def ws_read_text(stream: ByteStream, buffer: bytearray) -> bytes:
    """One masked client frame's payload."""

    async def need(count: int) -> None:
        while len(buffer) < count:
            buffer.extend(await stream.receive())

    await need(2)
    size = buffer[1] & 0x7F
    offset = 2
    if size == 126:
        await need(4)
        size, offset = struct.unpack("!H", bytes(buffer[2:4]))[0], 4
    elif size == 127:
        await need(10)
        size, offset = struct.unpack("!Q", bytes(buffer[2:10]))[0], 10
    await need(offset + 4 + size)
    mask = bytes(buffer[offset : offset + 4])
    data = bytes(b ^ mask[i % 4] for i, b in enumerate(buffer[offset + 4 : offset + 4 + size]))
    del buffer[: offset + 4 + size]
    return data
