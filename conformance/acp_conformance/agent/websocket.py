"""ACP over a WebSocket (``GET /acp`` + ``Upgrade: websocket``): one socket carries the whole connection.

The 101 response carries ``Acp-Connection-Id`` and the affinity cookie; the first message must be an
``initialize`` request (else the socket is closed with 1002); every message is one text frame, and binary frames
are ignored, as the RFD says. The socket closing ends the connection, never the server's sessions.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from .remote_connection import RemoteConnection
from .remote_rules import CONNECTION, INITIAL, Inbound

if TYPE_CHECKING:
    from .http_app import AcpHttpApp, Receive, Scope, Send

__all__ = ["serve_websocket"]

_log = logging.getLogger("acp_conformance.agent")
_OUTGOING_FRAMES = 256  # frames the agent may queue ahead of a slow socket before its writer waits


def _initialize_request(text: str) -> dict[str, Any] | None:
    try:
        message = msgspec.json.decode(text)
    except msgspec.DecodeError:
        return None
    if isinstance(message, dict) and message.get("method") == "initialize" and message.get("id") is not None:
        return message
    return None


async def _next_text(receive: Receive) -> str | None:
    """The next text frame (binary frames skipped); None once the client is gone."""
    while True:
        event = await receive()
        if event["type"] == "websocket.disconnect":
            return None
        if event["type"] != "websocket.receive":
            continue
        text = event.get("text")
        if text is not None:
            return str(text)
        _log.info("ignoring a binary WebSocket frame (ACP messages are text frames)")


async def serve_websocket(app: AcpHttpApp, scope: Scope, receive: Receive, send: Send) -> None:
    if (await receive())["type"] != "websocket.connect":
        return
    outgoing_send, outgoing = anyio.create_memory_object_stream[bytes](_OUTGOING_FRAMES)

    async def to_socket(frames: list[bytes]) -> None:
        for frame in frames:
            await outgoing_send.send(frame)

    conn = RemoteConnection(websocket_sink=to_socket, broken=app.options.broken)
    binary = "binary-frames" in app.options.broken
    headers = [(b"acp-connection-id", conn.connection_id.encode())]
    headers += [(name.encode(), value.encode()) for name, value in [app.cookie_header(conn)]]
    await send({"type": "websocket.accept", "headers": headers})
    first = await _next_text(receive)
    if first is None:
        return
    initialize = _initialize_request(first)
    if initialize is None:
        await send({"type": "websocket.close", "code": 1002, "reason": "the first message must be initialize"})
        return
    await app.start_connection(conn)
    try:
        async with anyio.create_task_group() as tg:

            async def pump() -> None:
                async with outgoing:
                    async for frame in outgoing:
                        if binary:  # --broken binary-frames
                            await send({"type": "websocket.send", "bytes": frame})
                        else:
                            await send({"type": "websocket.send", "text": frame.decode("utf-8")})

            async def close_when_ended() -> None:
                await conn.ended.wait()
                tg.cancel_scope.cancel()
                with anyio.CancelScope(shield=True), anyio.move_on_after(2):
                    await send({"type": "websocket.close", "code": 1000, "reason": "the connection ended"})

            tg.start_soon(pump)
            tg.start_soon(close_when_ended)
            await conn.feed(Inbound(initialize, first.encode(), INITIAL))
            while (text := await _next_text(receive)) is not None:
                raw = text.encode()
                try:
                    await conn.feed(Inbound({}, raw, CONNECTION))
                except anyio.ClosedResourceError:
                    break
                if "close-socket" in app.options.broken and b'"session/close"' in raw:
                    await anyio.sleep(0.2)  # --broken close-socket: one session's close ends the socket
                    break
            tg.cancel_scope.cancel()
    finally:
        conn.end()
        outgoing_send.close()
    if not conn.ended.is_set():
        with anyio.move_on_after(5):
            await conn.ended.wait()
