"""The WebSocket profile as a ``FrameTransport``: ``GET`` + ``Upgrade: websocket`` on the same endpoint, then one
JSON-RPC message per text frame both ways (``initialize`` first). The 101 answer carries ``Acp-Connection-Id``.

The upgrade is a request of the connection's ``httpx`` client, so it carries the custom headers and the cookie
jar, made here under one deadline (``connect_timeout``) for all of it; the socket it leaves is then run by an
``httpx-ws`` session (wsproto on anyio), and wsproto frames what we send. That session buffers a message's pieces
without bound, parses each received frame through wsproto's layers and hands messages over one task switch at a
time, so a session class of ours reads instead (an override of httpx-ws internals, hence the pinned series): the
server's frames parsed by our ``WsFrameReader`` (``wsframes.py``), straight into the transport's bounded inbox,
a read's messages at once; a message longer than the frame limit is skipped as it arrives and reported as an
``OversizedFrame``, as on stdio; binary messages are ignored; a broken frame closes the socket with the RFC's
code and ends the transport with a typed error.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio

from ...errors import RemoteHttpError
from ..base import PeerExit
from ..framing import BLOCK_LINES, Frame, LineBlock, OversizedFrame
from .client import describe, make_client, read_bounded, transport_error
from .errors import RemoteExtraMissing, RemoteTransportError
from .headers import CONNECTION_ID
from .inbox import BatchInbox
from .limits import MAX_ERROR_BODY, notifications_trickle
from .wsframes import WsClose, WsFrameReader, WsPing, WsProtocolError

if TYPE_CHECKING:
    import httpx

    from .dialer import RemoteDialer

__all__ = ["WebSocketFrames", "open_websocket", "upgrade_headers", "upgrade_websocket"]

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
    session_class = _bounded_session_class(httpx_ws, dialer.limits.max_message, inbox, dialer.limits.stream_pause)
    async with make_client(dialer, http1=True, http2=False, streams=1) as client:
        response = await upgrade_websocket(dialer, client)
        try:
            session = session_class(
                response.extensions["network_stream"],
                max_message_size_bytes=_READ_SIZE,
                queue_size=dialer.limits.inbox_frames,
                keepalive_ping_interval_seconds=None,
                response=response,
            )
            # Entered by hand: the caller's exception goes on as it is (passed into httpx-ws's task group, it
            # would come out wrapped in an ExceptionGroup).
            ws = await session.__aenter__()
            transport = WebSocketFrames(dialer, ws, inbox)
            try:
                yield transport
            finally:
                with anyio.CancelScope(shield=True):
                    await transport.aclose()
                try:  # not inside the shield: httpx-ws's task group was entered outside it
                    await session.__aexit__(None, None, None)
                except Exception as exc:  # the peer may be gone already
                    _log.debug("closing the WebSocket to %s: %s", dialer.display_url, dialer.redact(str(exc)))
        finally:
            with anyio.CancelScope(shield=True):
                await response.aclose()


def upgrade_headers() -> dict[str, str]:
    """The headers of a WebSocket upgrade request (RFC 6455, 4.1)."""
    key = base64.b64encode(secrets.token_bytes(16)).decode("ascii")
    return {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Key": key, "Sec-WebSocket-Version": "13"}


async def upgrade_websocket(dialer: RemoteDialer, client: httpx.AsyncClient) -> httpx.Response:
    """The upgrade, all of it (TCP, TLS, the request, the ``101`` and every header after it) within the dialer's
    ``connect_timeout``: a server that sends ``101`` and then one header byte a second is cut there, not after
    the day h11's header limit allows. Returns the ``101`` response (its network stream is the socket); a
    refusal is a ``RemoteHttpError`` with the status and the start of the body, anything else a
    ``RemoteTransportError``. Done here rather than by httpx-ws so that one deadline covers it: a cancel scope
    around httpx-ws's context would not nest with the task group it opens."""
    limit = dialer.limits.connect_timeout
    refused: tuple[int, bytes] | None = None
    try:
        with anyio.fail_after(limit):
            request = client.build_request("GET", dialer.request_url, headers=upgrade_headers())
            response = await client.send(request, stream=True)
            if response.status_code == 101:
                return response
            try:
                body, _ = await read_bounded(response, MAX_ERROR_BODY)
            except Exception:  # the status alone still says it
                body = b""
            finally:
                await response.aclose()
            refused = response.status_code, body
    except TimeoutError:
        raise RemoteTransportError(
            f"the WebSocket upgrade at {dialer.display_url} did not finish within {limit:g} s"
        ) from None
    except RemoteTransportError:
        raise
    except Exception as exc:
        raise _connect_error(dialer, exc) from None
    raise _upgrade_error(dialer, *refused)


def _upgrade_error(dialer: RemoteDialer, status: int, body: bytes) -> RemoteHttpError:
    text = dialer.redact(body.decode("utf-8", "replace"))
    data = {"status": status, "body": text, "transport": "http"}
    brief = text[:200].strip()
    message = f"WebSocket upgrade: HTTP {status} from {dialer.display_url}" + (f": {brief}" if brief else "")
    return RemoteHttpError(-32603, message, data)


def _connect_error(dialer: RemoteDialer, exc: BaseException) -> RemoteTransportError:
    if isinstance(exc, TimeoutError) or type(exc).__name__.endswith("Timeout"):  # httpx's own timeouts
        return RemoteTransportError(f"the WebSocket upgrade at {dialer.display_url} did not finish in time")
    text = dialer.redact(describe(exc))
    return transport_error(exc, f"connecting to {dialer.display_url} failed: {text}")


class _Ended:
    """What the reader puts last into the inbox: why the socket ended."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


Item = Frame | _Ended


def _bounded_session_class(httpx_ws: Any, limit: int, inbox: BatchInbox[Item], pause: float = 0.0) -> type:
    """A session class whose reader parses the server's frames with ``WsFrameReader`` (at most ``limit`` bytes
    of one message kept) and puts each message straight into ``inbox``, a read's messages at once (see the
    module's docstring)."""
    import wsproto.events as events

    class BoundedSession(httpx_ws.AsyncWebSocketSession):  # type: ignore[misc]
        async def _background_receive(self, max_bytes: int) -> None:
            reader = WsFrameReader(limit)
            ended = "the WebSocket ended"
            read = _direct_read(self.stream) or self._read_stream
            streaming = notifications_trickle
            try:
                while not self._should_close.is_set():
                    data = await read(max_bytes)
                    items = reader.feed(data)
                    if not items:
                        continue
                    frames: list[Item] = items  # type: ignore[assignment]  # messages only
                    if reader.only_messages:
                        block = _as_block(items) if len(items) >= BLOCK_LINES else None  # type: ignore[arg-type]
                        if block is not None:
                            await inbox.put_all([block], block.count)
                        else:
                            await inbox.put_all(frames)
                        if pause and streaming(data):
                            await anyio.sleep(pause)  # a server writing a notification at a time: let it write more
                        continue
                    else:
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


def _direct_read(stream: Any) -> Callable[[int], Awaitable[bytes]] | None:
    """The socket's anyio stream under httpcore's (its ``AnyIOStream``, on asyncio), read directly: httpcore's read
    opens a timeout scope and an exception mapping on every call, the largest part of a read's cost when each
    read brings a few small frames (a server that writes a frame at a time). These reads have no timeout, and
    any failure ends the session either way. None when the stream is another kind (trio's): its own read."""
    inner = getattr(getattr(stream, "_stream", None), "_stream", None)
    receive = getattr(inner, "receive", None)
    if receive is None or not callable(receive) or not hasattr(stream, "_leading_data"):
        return None

    async def read(max_bytes: int) -> bytes:
        if stream._leading_data:  # what came with the upgrade's answer
            return await stream.read(max_bytes)  # type: ignore[no-any-return]
        return await receive(max_bytes)  # type: ignore[no-any-return]

    return read


def _as_block(messages: list[bytes | OversizedFrame]) -> LineBlock | None:
    """A read's messages as one ``LineBlock`` (the rpc layer decodes it at once) when each is one line: none holds
    an LF (JSON may spread over lines; a text frame may carry that) and none was oversized (not bytes: the join
    refuses it). The frame reader checked their UTF-8 and size."""
    try:
        data = b"\n".join([*messages, b""])  # type: ignore[list-item]  # an OversizedFrame fails it
    except TypeError:
        return None
    if len(data) - len(data.replace(b"\n", b"")) != len(messages):
        return None
    return LineBlock(data, len(messages))


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
