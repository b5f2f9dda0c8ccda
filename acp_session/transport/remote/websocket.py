"""The WebSocket profile as a ``FrameTransport``: ``GET`` + ``Upgrade: websocket`` on the same endpoint, then one
JSON-RPC message per text frame both ways (``initialize`` first). The 101 answer carries ``Acp-Connection-Id``.

Built on ``httpx-ws`` (wsproto on anyio) over the connection's ``httpx`` client, so the upgrade carries the
custom headers and the cookie jar, and wsproto frames what we send. Its session buffers a message's pieces
without bound, parses each received frame through wsproto's layers and hands messages over one task switch at a
time, so a session class of ours reads instead (an override of httpx-ws internals, hence the pinned series): the
server's frames parsed by our ``WsFrameReader`` (``wsframes.py``), straight into the transport's bounded inbox,
a read's messages at once; a message longer than the frame limit is skipped as it arrives and reported as an
``OversizedFrame``, as on stdio; binary messages are ignored; a broken frame closes the socket with the RFC's
code and ends the transport with a typed error.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio

from ...errors import RemoteHttpError
from ..base import PeerExit
from ..framing import Frame
from .client import describe, make_client, read_bounded, transport_error
from .errors import RemoteExtraMissing, RemoteTransportError
from .headers import CONNECTION_ID
from .inbox import BatchInbox
from .limits import MAX_ERROR_BODY
from .wsframes import WsClose, WsFrameReader, WsPing, WsProtocolError

if TYPE_CHECKING:
    from .dialer import RemoteDialer

__all__ = ["WebSocketFrames", "open_websocket"]

_log = logging.getLogger("acp_session.transport.remote")
_READ_SIZE = 256 * 1024
"""Bytes asked of the socket per read: a read's messages go to the rpc layer in one batch, and 256 KiB a wake-up
folded about 1.4x faster than 64 KiB (A/B in docs/performance.md)."""


def _import_ws() -> Any:
    try:
        import httpx_ws
    except ImportError:
        raise RemoteExtraMissing("httpx-ws") from None
    return httpx_ws


@asynccontextmanager
async def open_websocket(dialer: RemoteDialer) -> AsyncIterator[WebSocketFrames]:
    httpx_ws = _import_ws()
    inbox = BatchInbox[Item](dialer.limits.inbox_frames)
    session_class = _bounded_session_class(httpx_ws, dialer.limits.max_message, inbox)
    client = make_client(dialer, http1=True, http2=False, streams=1)
    refusal: list[bytes] = []

    async def keep_refusal_body(response: Any) -> None:
        # httpx-ws closes a refused upgrade's response before raising: its body (why the server refused) is read
        # here, while it is still open.
        if response.status_code != 101 and not response.is_redirect:
            try:
                refusal.append((await read_bounded(response, MAX_ERROR_BODY))[0])
            except Exception:  # the status alone still says it
                refusal.append(b"")

    client.event_hooks["response"].append(keep_refusal_body)
    async with client:
        try:
            # Bounded by the client's connect and read timeouts (a scope here would not nest with its task group).
            connecting = httpx_ws.aconnect_ws(
                dialer.request_url,
                client,
                max_message_size_bytes=_READ_SIZE,
                queue_size=dialer.limits.inbox_frames,
                keepalive_ping_interval_seconds=None,
                session_class=session_class,
            )
            ws = await connecting.__aenter__()
        except httpx_ws.WebSocketUpgradeError as exc:
            raise await _upgrade_error(dialer, exc.response, refusal[-1] if refusal else None) from None
        except Exception as exc:
            if isinstance(exc, RemoteTransportError):
                raise
            raise _connect_error(dialer, exc) from None
        transport = WebSocketFrames(dialer, ws, inbox)
        try:
            yield transport
        finally:
            # The caller's exception goes on as it is: passed into httpx-ws's task group, it would come out
            # wrapped in an ExceptionGroup.
            with anyio.CancelScope(shield=True):
                await transport.aclose()
            try:  # not inside the shield: httpx-ws's task group was entered outside it
                await connecting.__aexit__(None, None, None)
            except Exception as exc:  # the peer may be gone already
                _log.debug("closing the WebSocket to %s: %s", dialer.display_url, dialer.redact(str(exc)))


async def _upgrade_error(dialer: RemoteDialer, response: Any, body: bytes | None) -> RemoteHttpError:
    status = response.status_code
    if body is None:
        try:
            body, _ = await read_bounded(response, MAX_ERROR_BODY)
        except Exception:
            body = b""
    text = dialer.redact(body.decode("utf-8", "replace"))
    data = {"status": status, "body": text, "transport": "http"}
    brief = text[:200].strip()
    message = f"WebSocket upgrade: HTTP {status} from {dialer.display_url}" + (f": {brief}" if brief else "")
    return RemoteHttpError(-32603, message, data)


def _connect_error(dialer: RemoteDialer, exc: BaseException) -> RemoteTransportError:
    if isinstance(exc, TimeoutError):
        return RemoteTransportError(f"the WebSocket upgrade at {dialer.display_url} did not finish in time")
    text = dialer.redact(describe(exc))
    return transport_error(exc, f"connecting to {dialer.display_url} failed: {text}")


class _Ended:
    """What the reader puts last into the inbox: why the socket ended."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


Item = Frame | _Ended


def _bounded_session_class(httpx_ws: Any, limit: int, inbox: BatchInbox[Item]) -> type:
    """A session class whose reader parses the server's frames with ``WsFrameReader`` (at most ``limit`` bytes
    of one message kept) and puts each message straight into ``inbox``, a read's messages at once (see the
    module's docstring)."""
    import wsproto.events as events

    class BoundedSession(httpx_ws.AsyncWebSocketSession):  # type: ignore[misc]
        async def _background_receive(self, max_bytes: int) -> None:
            reader = WsFrameReader(limit)
            ended = "the WebSocket ended"
            try:
                while not self._should_close.is_set():
                    items = reader.feed(await self._read_stream(max_bytes))
                    if not items:
                        continue
                    frames: list[Item] = items  # type: ignore[assignment]  # messages only
                    if not reader.only_messages:
                        frames = []
                        for item in items:
                            if isinstance(item, WsPing):
                                await self.send(events.Pong(item.payload))
                            elif isinstance(item, WsClose):
                                self._should_close.set()
                                ended = f"the server closed the WebSocket (code {item.code})"
                                code = 1000 if item.code == 1005 else item.code
                                with contextlib.suppress(Exception):
                                    await self.send(events.CloseConnection(code))
                            elif isinstance(item, WsProtocolError):  # the last item: what came before counts
                                ended = f"the WebSocket failed: the server broke the protocol ({item})"
                                with contextlib.suppress(Exception):
                                    await self.close(item.code, str(item))
                            else:
                                frames.append(item)
                    if frames:
                        await inbox.put_all(frames)
            except Exception:  # any failure of the socket ends the session, never the task group around it
                ended = "the WebSocket failed"
                with contextlib.suppress(Exception):
                    await self.close(1011, "Stream error")
            finally:
                inbox.put_nowait(_Ended(ended))
                inbox.close()

    return BoundedSession


class WebSocketFrames:
    """A ``FrameTransport`` over one WebSocket (made by ``RemoteDialer.open``)."""

    def __init__(self, dialer: RemoteDialer, ws: Any, inbox: BatchInbox[Item]) -> None:
        self.dialer = dialer
        self._ws = ws
        self._inbox = inbox
        self._ended: _Ended | None = None
        response = getattr(ws, "response", None)
        self.connection_id: str | None = None if response is None else response.headers.get(CONNECTION_ID)
        if self.connection_id is None:
            _log.info("the WebSocket upgrade at %s carried no %s", dialer.display_url, CONNECTION_ID)
        self.failure: BaseException | None = None
        self._closed = False
        self._send_lock = anyio.Lock()

    @property
    def name(self) -> str:
        return self.dialer.display_url

    async def receive_frames(self) -> list[Frame]:
        if self._ended is None:
            try:
                items = await self._inbox.take()
            except anyio.EndOfStream:
                items = [_Ended("the WebSocket ended")]
            last = items[-1]
            if isinstance(last, _Ended):  # the reader's last item
                self._ended = last
                items.pop()
            if items:
                return items  # type: ignore[return-value]  # the rest are frames
        assert self._ended is not None
        self._end(RemoteTransportError(f"{self._ended.reason} ({self.name})"))
        raise anyio.EndOfStream

    async def send_frames(self, frames: list[bytes]) -> None:
        if self._closed or self.failure is not None:
            raise anyio.BrokenResourceError
        async with self._send_lock:
            for frame in frames:
                try:
                    await self._ws.send_text(frame.decode("utf-8"))
                except Exception:
                    self._end(RemoteTransportError(f"writing to the WebSocket at {self.name} failed"))
                    raise anyio.BrokenResourceError from None

    async def probe(self) -> None:
        """A liveness check (``acp_session.client.reconnect.LivenessProbe``): a WebSocket ping, returning when its
        pong came back; a reconnect policy bounds the wait."""
        if self._closed or self.failure is not None:
            raise anyio.BrokenResourceError
        pong = await self._ws.ping()
        await pong.wait()

    def _end(self, error: BaseException) -> None:
        if self.failure is None and not self._closed:
            self.failure = error

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        with anyio.move_on_after(self.dialer.limits.close_timeout, shield=True):
            try:
                await self._ws.close()
            except Exception as exc:
                _log.debug("closing the WebSocket to %s: %s", self.name, self.dialer.redact(str(exc)))

    async def peer_exit(self) -> PeerExit:
        return PeerExit(reason=None if self.failure is None else str(self.failure))
