"""ACP over a WebSocket (``GET /acp`` + ``Upgrade: websocket``): one socket carries the whole connection.

The 101 response carries ``Acp-Connection-Id`` and the affinity cookie; the first message must be an
``initialize`` request (else the socket is closed with 1002); every message is one text frame, and binary frames
are ignored, as the RFD says. The socket closing ends the connection (what the application keeps beyond it, its
sessions, is its own).

The server's caps (``limits``) hold here too: an upgrade past ``--max-connections`` or ``--max-pending`` gets
``503`` instead of the 101, a socket that sends no ``initialize`` within the pending timeout is closed with
``1008``, and each message waits for room in the server's byte budget before the application gets it
(meanwhile the socket is not read).
"""

from __future__ import annotations

import collections
import logging
from typing import TYPE_CHECKING, Any

import anyio
import msgspec

from .rules import CONNECTION, INITIAL, Inbound
from .wswrite import FrameWriter

if TYPE_CHECKING:
    from .app import AcpAsgiApp, Receive, Scope, Send

__all__ = ["serve_websocket"]

_log = logging.getLogger("acp_session.server")
_OUTGOING_FRAMES = 256  # frames the agent may queue ahead of a slow socket before its writer waits


class _Outgoing:
    """The frames the application wrote, waiting for the socket: a writer waits while more than ``capacity`` are
    queued; the socket's pump takes everything queued at once (one wake-up per burst, not two task switches per
    frame)."""

    def __init__(self, capacity: int) -> None:
        self._queue: collections.deque[bytes] = collections.deque()
        self._capacity = capacity
        self._ready = anyio.Event()
        self._room = anyio.Event()
        self._closed = False

    async def put(self, frames: list[bytes]) -> None:
        """Queue ``frames`` in order, all at once (so two writers never interleave their frames), then wait while
        more than ``capacity`` are queued; ``BrokenResourceError`` once the socket is gone."""
        if self._closed:
            raise anyio.BrokenResourceError
        queue = self._queue
        queue.extend(frames)
        self._ready.set()
        while len(queue) > self._capacity and not self._closed:
            if self._room.is_set():  # writers waiting at once share one event
                self._room = anyio.Event()
            await self._room.wait()
        if self._closed:
            raise anyio.BrokenResourceError

    async def take(self) -> list[bytes]:
        """Every frame queued (waiting for one); ``EndOfStream`` once closed."""
        while not self._queue:
            if self._closed:
                raise anyio.EndOfStream
            self._ready = anyio.Event()
            await self._ready.wait()
        frames = list(self._queue)
        self._queue.clear()
        self._room.set()
        return frames

    def close(self) -> None:
        self._closed = True
        self._ready.set()
        self._room.set()


def _initialize_request(text: str) -> dict[str, Any] | None:
    try:
        message = msgspec.json.decode(text)
    except msgspec.DecodeError:
        return None
    if isinstance(message, dict) and message.get("method") == "initialize" and message.get("id") is not None:
        return message
    return None


async def _next_text(app: AcpAsgiApp, receive: Receive) -> str | None:
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
        app.log.info("binary WebSocket frames", "ignoring a binary WebSocket frame (ACP messages are text frames)")


async def _until_disconnect(receive: Receive) -> None:
    """After the server's close frame, the client's (at most 2 s): returning from the app while hypercorn answers a
    close the client sent at the same moment makes hypercorn on trio send two things at once, which ends the
    whole server (``BusyResourceError``)."""
    with anyio.move_on_after(2):
        while (await receive())["type"] != "websocket.disconnect":
            pass


async def _send_close(send: Send, code: int, reason: str) -> None:
    """Send the close frame; a client that hung up meanwhile is no error (hypercorn on trio then raises
    ``BusyResourceError`` from its own socket shutdown, which runs beside this send)."""
    try:
        await send({"type": "websocket.close", "code": code, "reason": reason})
    except Exception as exc:  # the socket is going away; there is nobody to tell
        _log.debug("closing a WebSocket whose client is gone: %r", exc)


async def _close(receive: Receive, send: Send, code: int, reason: str) -> None:
    await _send_close(send, code, reason)
    await _until_disconnect(receive)


async def _first_message(app: AcpAsgiApp, receive: Receive, send: Send, headers: Any) -> str | None:
    """Accept the upgrade and wait for the first text frame; None (the socket closed) when none comes within the
    pending timeout."""
    await send({"type": "websocket.accept", "headers": headers})
    timeout = app.limits.pending_timeout
    with anyio.move_on_after(timeout):
        return await _next_text(app, receive)
    app.log.info("WebSockets closed for sending no initialize", "closing a WebSocket: no initialize in %g s", timeout)
    await _close(receive, send, 1008, f"no initialize within {timeout:g} s (--pending-timeout)")
    return None


async def serve_websocket(app: AcpAsgiApp, scope: Scope, receive: Receive, send: Send) -> None:
    """Serve one upgrade the caller let through the server's caps (``AcpAsgiApp.capacity_refusal``): it counts
    as not started from now (before anything is awaited, so no other upgrade passes the same check) until its
    ``initialize`` came."""
    app.pending_sockets += 1
    try:
        if (await receive())["type"] != "websocket.connect":
            return
        outgoing = _Outgoing(_OUTGOING_FRAMES)
        conn = app.new_connection(scope, outgoing.put)
        headers = [(b"acp-connection-id", conn.connection_id.encode())]
        headers += [(name.encode(), value.encode()) for name, value in [app.cookie_header(conn)]]
        first = await _first_message(app, receive, send, headers)
    finally:
        app.pending_sockets -= 1
    hooks = app.hooks
    if first is None:
        return
    initialize = _initialize_request(first)
    if initialize is None:
        await _close(receive, send, 1002, "the first message must be initialize")
        return
    await app.start_connection(conn)
    writer = FrameWriter(send, hooks)
    closed_here = False
    try:
        async with anyio.create_task_group() as tg:

            async def pump() -> None:
                try:
                    while True:
                        await writer.write(await outgoing.take())  # a burst in one write (``wswrite``)
                except anyio.EndOfStream:
                    pass
                finally:
                    outgoing.close()

            async def close_when_ended() -> None:
                nonlocal closed_here
                await conn.ended.wait()
                tg.cancel_scope.cancel()
                with anyio.CancelScope(shield=True), anyio.move_on_after(2):
                    closed_here = True
                    reason = conn.end_reason
                    if reason is None:
                        await _send_close(send, 1000, "the connection ended")
                    else:  # a close reason is at most 123 bytes
                        await _send_close(send, 1013, reason.encode()[:123].decode(errors="ignore"))

            tg.start_soon(pump)
            tg.start_soon(close_when_ended)
            text: str | None = first
            message: Any = initialize
            route = INITIAL
            while text is not None:
                raw = text.encode()
                await app.budget.take_when_free(len(raw))  # the connection gives it back once the agent took it
                try:
                    await conn.feed(Inbound(message, raw, route))
                except anyio.ClosedResourceError:
                    app.budget.give_back(len(raw))
                    break
                if not await hooks.after_websocket_message(raw):
                    break  # a test server that closes the socket here (ServerHooks)
                text, message, route = await _next_text(app, receive), {}, CONNECTION
            tg.cancel_scope.cancel()
        if closed_here:
            await _until_disconnect(receive)
    finally:
        conn.end()
        outgoing.close()
    if not conn.ended.is_set():
        with anyio.move_on_after(5):
            await conn.ended.wait()
