"""A hostile remote agent in a process of its own, for the command-line tests (``acp-session --url``,
``acp-conformance --url``): ``python -m tests.helpers.hostile_remote MODE`` prints its URL (``http://``; the same
port takes ``ws://``) on the first stdout line and serves until it is killed.

Modes: ``silent`` never answers ``initialize`` (over WebSocket: after the 101); ``dribble`` starts its answer (the
``initialize`` POST's 200, the upgrade's 101) and then sends one header byte a second; ``silent-login``
answers ``initialize`` advertising one login method, then never answers ``auth/login``; ``many-logins``
advertises 100 000 login methods.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import anyio
from anyio.abc import ByteStream

from tests.remote.hostile import Request, Served, send, serve, ws_accept, ws_read_text, ws_text

EVENTS_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"


def _methods(mode: str) -> list[dict[str, Any]]:
    if mode == "many-logins":
        return [{"type": "agent", "methodId": f"login-{n}", "name": f"Login number {n}"} for n in range(100_000)]
    return [{"type": "agent", "methodId": "browser", "name": "Log in with a browser"}]


def _answer(request_id: Any, mode: str) -> bytes:
    result = {
        "protocolVersion": 2,
        "info": {"name": "hostile", "version": "0"},
        "capabilities": {"session": {}},
        "authMethods": _methods(mode),
    }
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode()


async def _dribble(stream: ByteStream, served: Served, status_line: bytes) -> None:
    await send(stream, served, status_line)
    while True:  # one byte of a header a second, never its end
        await send(stream, served, b"x")
        await anyio.sleep(1)


def handler(mode: str) -> Any:
    async def handle(stream: ByteStream, request: Request, served: Served, buffer: bytearray) -> bool:
        if request.headers.get("upgrade", "").lower() == "websocket":
            if mode == "dribble":
                await _dribble(stream, served, b"HTTP/1.1 101 Switching Protocols\r\n")
            await send(stream, served, ws_accept(request))
            initialize = json.loads(await ws_read_text(stream, buffer))
            if mode != "silent":
                await send(stream, served, ws_text(_answer(initialize["id"], mode)))
            while True:  # read (and ignore) whatever comes next
                await ws_read_text(stream, buffer)
        if request.method == "GET":
            await send(stream, served, EVENTS_HEAD)
            await anyio.sleep_forever()
        if request.method == "DELETE":
            await send(stream, served, b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
            return True
        try:
            message = request.json()
        except ValueError:
            message = {}
        if not isinstance(message, dict) or message.get("method") != "initialize":
            await send(stream, served, b"HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n")  # never answered
            return True
        if mode == "silent":
            await anyio.sleep_forever()
        if mode == "dribble":
            await _dribble(stream, served, b"HTTP/1.1 200 OK\r\n")
        body = _answer(message["id"], mode)
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nAcp-Connection-Id: hostile-1\r\n"
        await send(stream, served, head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
        return True

    return handle


async def main(mode: str) -> None:
    async with serve(handler(mode)) as served:
        print(served.url, flush=True)
        await anyio.sleep_forever()


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
