"""The Streamable HTTP profile as a ``FrameTransport``: each message we send is one POST; what the agent sends
arrives as Server-Sent Events on GET streams, one for the connection and one for each session.

The rules (the RFD, and what the official TypeScript server does): ``initialize`` is POSTed without
``Acp-Connection-Id`` and answered with 200, its answer in the body and the connection id in the header; the
connection's stream is opened before anything else is sent; every other POST is answered with 202 and its
answer comes on a stream. A session's stream is opened the first time the session is used (its id seen in an
answer or in a message we send), before that message goes out, and again after it was lost. A subagent's
stream is opened when the client says it follows that child (``follow_session``: it tracks the child), at most
``max_subagent_streams`` at once, the others waiting in order. Losing the
connection's stream ends the transport (every pending request fails; nothing is left half-dead). A 409 detaches
only that session; 401, 403, 404, 410 and network errors end the transport; any other status fails only the
request it carried (``RemoteHttpError``). Closing sends ``DELETE``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
import msgspec
from anyio.abc import TaskGroup

from ...errors import RemoteHttpError
from ..base import PeerExit
from ..framing import Frame, LineBlock, OversizedFrame, check_utf8, is_utf8
from .client import RemoteClients, describe, import_httpx, read_bounded, transport_error
from .errors import RemoteProtocolError, RemoteTransportError
from .headers import CONNECTION_ID, SESSION_ID
from .inbox import BatchInbox
from .limits import MAX_ERROR_BODY, notifications_trickle
from .routing import REATTACH, Head, Routes, error_answer, read_head
from .sse import EventRun, SseLimitExceeded, SseParser

if TYPE_CHECKING:
    import httpx

    from .dialer import RemoteDialer

__all__ = ["HttpFrames", "open_http"]

_log = logging.getLogger("acp_session.transport.remote")

ENDS_CONNECTION = frozenset({401, 403, 404, 410})
_OK = frozenset({200, 202, 204})
_JSON = "application/json"
_EVENTS = "text/event-stream"


@asynccontextmanager
async def open_http(dialer: RemoteDialer) -> AsyncIterator[HttpFrames]:
    http1, http2 = dialer.http_versions()
    limits = dialer.limits
    streams = limits.max_session_streams + limits.max_subagent_streams + 1
    clients = RemoteClients(dialer, http1=http1, http2=http2, streams=streams)
    async with clients.messages:
        # Entered by hand: a task group would wrap the caller's own exception in an ExceptionGroup.
        tg = anyio.create_task_group()
        await tg.__aenter__()
        transport = HttpFrames(dialer, clients, tg)
        try:
            yield transport
        finally:
            with anyio.CancelScope(shield=True):
                await transport.aclose()
            tg.cancel_scope.cancel()
            await tg.__aexit__(None, None, None)


class _Stream:
    """One GET event stream: the connection's (``session`` None) or a session's (``child``: a subagent's the client
    follows, counted against ``max_subagent_streams``)."""

    __slots__ = ("child", "error", "ready", "scope", "session")

    def __init__(self, session: str | None, child: bool = False) -> None:
        self.session = session
        self.child = child
        self.scope = anyio.CancelScope()
        self.ready = anyio.Event()  # set once the server answered the GET (``error`` says how)
        self.error: BaseException | None = None


class HttpFrames:
    """A ``FrameTransport`` over Streamable HTTP (made by ``RemoteDialer.open``)."""

    def __init__(self, dialer: RemoteDialer, clients: RemoteClients, task_group: TaskGroup) -> None:
        self._httpx = import_httpx()
        self.dialer = dialer
        self._clients = clients
        self._client = clients.messages
        self._tg = task_group
        self._limits = dialer.limits
        self._url = dialer.request_url
        self._routes = Routes()
        self._inbox = BatchInbox[Frame](dialer.limits.inbox_frames)
        self._streams: dict[str | None, _Stream] = {}
        self._children_open = 0  # subagent streams whose task still runs (each holds a connection)
        self._children_waiting: dict[str, None] = {}  # subagents followed past max_subagent_streams, in order
        self._send_lock = anyio.Lock()
        self.connection_id: str | None = None
        self._initialized: anyio.Event | None = None  # set once the initialize POST (started) has ended
        self._init_scope = anyio.CancelScope()
        self.failure: BaseException | None = None
        """Why the transport ended, when it was not closed by us (a typed ``RemoteTransportError`` or
        ``RemoteHttpError``)."""
        self._closed = False

    @property
    def name(self) -> str:
        return self.dialer.display_url

    # -- FrameTransport ------------------------------------------------------------------------------------

    async def receive_frames(self) -> list[Frame]:
        return await self._inbox.take()

    async def send_frames(self, frames: list[bytes]) -> None:
        async with self._send_lock:
            for frame in frames:
                if self.failure is not None or self._closed:
                    raise anyio.BrokenResourceError
                await self._send(frame)

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._init_scope.cancel()
        for stream in self._streams.values():
            stream.scope.cancel()
        self._inbox.close()
        connection_id, self.connection_id = self.connection_id, None
        if connection_id is None:
            return
        with anyio.move_on_after(self._limits.close_timeout, shield=True):
            try:
                # Its status only: the body (whatever a server puts there) is not read.
                async with self._client.stream("DELETE", self._url, headers={CONNECTION_ID: connection_id}) as answer:
                    status = answer.status_code
                if status not in _OK and status != 404:
                    _log.info("DELETE of the connection at %s answered %d", self.name, status)
            except Exception as exc:  # the server may be gone already; closing goes on
                _log.debug("DELETE of the connection at %s failed: %s", self.name, self.dialer.redact(str(exc)))

    async def peer_exit(self) -> PeerExit:
        return PeerExit(reason=None if self.failure is None else str(self.failure))

    # -- SessionStreams ------------------------------------------------------------------------------------

    def follow_session(self, session_id: str) -> None:
        """Read a subagent's stream (the client tracks it): now, or once fewer than ``max_subagent_streams`` are
        open. Nothing for a session whose stream is open or waiting, or that is detached."""
        if self._closed or self.failure is not None or self.connection_id is None:
            return
        if session_id in self._streams or session_id in self._children_waiting or session_id in self._routes.detached:
            return
        if self._children_open < self._limits.max_subagent_streams:
            self._open(session_id, child=True)
        elif len(self._children_waiting) < self._limits.max_session_streams:
            self._children_waiting[session_id] = None
        else:
            _log.debug("subagent %s not followed: %d are waiting for a stream", session_id, len(self._children_waiting))

    def unfollow_session(self, session_id: str) -> None:
        """Stop reading a subagent's stream (the client no longer tracks it); its place goes to the next waiting."""
        self._children_waiting.pop(session_id, None)
        stream = self._streams.get(session_id)
        if stream is not None and stream.child:
            del self._streams[session_id]
            stream.scope.cancel()

    # -- sending -------------------------------------------------------------------------------------------

    async def _send(self, frame: bytes) -> None:
        head = read_head(frame) or Head(msgspec.UNSET, None, None, None)
        if self.connection_id is None:
            if self._initialized is None:
                self._start_initialize(frame, head)
                return
            if head.method == "$/cancel_request":
                return  # initialize's own, given up on: no connection to address it to, and none will follow
            await self._initialized.wait()  # what follows initialize goes out once the connection exists
            if self.connection_id is None or self.failure is not None or self._closed:
                raise anyio.BrokenResourceError
        self._routes.sending(head)
        session = self._routes.outgoing_session(head)
        if session is not None:
            if head.method in REATTACH:
                self._routes.detached.pop(session, None)
            if not await self._session_ready(session):
                await self._refuse(head, session)
                return
            self._routes.sent(head, session)
        headers = {CONNECTION_ID: self.connection_id, "Content-Type": _JSON, "Accept": f"{_JSON}, {_EVENTS}"}
        if session is not None:
            headers[SESSION_ID] = session
        status, body = await self._post(frame, headers, what=head.method or "a message")
        if status in _OK:
            return
        data = self._error_data(status, body)
        if status == 409 and session is not None:
            await self._detach(session, data)
            await self._refuse(head, session)
            return
        error = RemoteHttpError(-32603, self._status_text(status, head.method, body), data)
        if status not in ENDS_CONNECTION and head.is_request:
            if session is None or self._routes.unanswered(head):
                await self._put(error_answer(head.id, error.message, data))
            return
        self._fail(error)  # the connection is gone, or a notification/answer was refused: nothing can report it
        raise anyio.BrokenResourceError

    def _start_initialize(self, frame: bytes, head: Head) -> None:
        """POST ``initialize`` in a task of its own: its answer is that POST's body, so the POST lasts as long as
        the agent takes to answer, and the sender (the rpc layer's writer, or a caller writing its own request)
        must not wait for it: the caller's own deadline (``initialize_timeout``) is what bounds the wait."""
        if head.method != "initialize" or not head.is_request:
            self._fail(RemoteProtocolError("the first message of a remote connection must be initialize"))
            raise anyio.BrokenResourceError
        self._initialized = anyio.Event()
        self._tg.start_soon(self._initialize, frame)

    async def _initialize(self, frame: bytes) -> None:
        """The ``initialize`` POST, then the connection's stream, then the answer to the rpc layer; a failure ends
        the transport (``failure`` says why)."""
        assert self._initialized is not None
        try:
            with self._init_scope:
                await self._open_connection(frame)
        except Exception as exc:  # in a task of the transport's: it ends the transport, never its task group
            self._fail(self._network_error(exc, "initialize"))
        finally:
            self._initialized.set()

    async def _open_connection(self, frame: bytes) -> None:
        answered = await self._post_initialize(frame)
        if answered is None:
            return
        status, body, connection_id = answered
        if status != 200:
            text = self._status_text(status, "initialize", body)
            self._fail(RemoteHttpError(-32603, text, self._error_data(status, body)))
            return
        if not connection_id:
            self._fail(RemoteProtocolError(f"the server at {self.name} answered initialize without {CONNECTION_ID}"))
            return
        self.connection_id = connection_id
        stream = self._open(None)  # the connection's stream is open before anything else is sent
        await stream.ready.wait()
        if stream.error is not None or self.failure is not None:
            return  # _stream_ended recorded why
        await self._put(body)

    async def _post_initialize(self, frame: bytes) -> tuple[int, bytes, str | None] | None:
        headers = {"Content-Type": _JSON, "Accept": f"{_JSON}, {_EVENTS}"}
        try:
            with anyio.fail_after(self._limits.response_timeout):
                request = self._client.build_request("POST", self._url, content=frame, headers=headers)
                response = await self._client.send(request, stream=True)
                try:
                    limit = self._limits.max_message if response.status_code == 200 else MAX_ERROR_BODY
                    body, more = await read_bounded(response, limit)
                finally:
                    await response.aclose()
        except Exception as exc:
            self._fail(self._network_error(exc, "initialize"))
            return None
        if more and response.status_code == 200:
            self._fail(RemoteProtocolError(f"the answer to initialize exceeds {self._limits.max_message} bytes"))
            return None
        return response.status_code, body, response.headers.get(CONNECTION_ID)

    async def _post(self, frame: bytes, headers: dict[str, str], *, what: str) -> tuple[int, bytes]:
        """POST one message; the status and (for an error status) the start of the body."""
        try:
            with anyio.fail_after(self._limits.response_timeout):
                request = self._client.build_request("POST", self._url, content=frame, headers=headers)
                response = await self._client.send(request, stream=True)
                try:
                    body, _ = await read_bounded(response, MAX_ERROR_BODY)
                finally:
                    await response.aclose()
        except Exception as exc:
            self._fail(self._network_error(exc, what))
            raise anyio.BrokenResourceError from None
        return response.status_code, body

    async def _refuse(self, head: Head, session: str) -> None:
        """A message for a detached session: a request gets the detaching error; anything else is dropped."""
        data = self._routes.detached.get(session) or {"transport": "http", "status": 409, "body": ""}
        if head.is_request:
            why = f"HTTP {data['status']}" if data.get("status") else "its event stream could not be opened"
            message = f"the session {session} is detached from this connection ({why}); load or resume it"
            await self._put(error_answer(head.id, message, data))

    # -- streams -------------------------------------------------------------------------------------------

    async def _session_ready(self, session: str) -> bool:
        """Open ``session``'s stream if it is not open; False if the session is (now) detached."""
        self._children_waiting.pop(session, None)  # a child the application uses now: opened at once
        for _ in range(2):  # a stream the server ended before it opened is tried once more
            if session in self._routes.detached:
                return False
            stream = self._streams.get(session) or self._open(session)
            await stream.ready.wait()
            if self.failure is not None:
                raise anyio.BrokenResourceError
            if stream.error is None:
                return True
        self._routes.detached[session] = {"transport": "http", "status": 0, "body": str(stream.error)}
        return False

    def _open(self, session: str | None, *, child: bool = False) -> _Stream:
        existing = self._streams.get(session)
        if existing is not None:
            return existing
        stream = _Stream(session, child)
        if session is not None and len(self._streams) > self._limits.max_session_streams:
            stream.error = RemoteProtocolError(f"more than {self._limits.max_session_streams} session streams")
            self._routes.detached[session] = {"transport": "http", "status": 0, "body": str(stream.error)}
            stream.ready.set()
            return stream
        self._streams[session] = stream
        if child:
            self._children_open += 1
        self._tg.start_soon(self._read_stream, stream)
        return stream

    async def _read_stream(self, stream: _Stream) -> None:
        error: BaseException | None = None
        try:
            with stream.scope:
                try:
                    await self._stream_events(stream)
                except Exception as exc:
                    error = exc
            if not stream.scope.cancel_called:
                await self._stream_ended(stream, error)
            stream.ready.set()
        finally:
            if stream.child:  # its connection is closed: the next waiting child's stream may open
                self._children_open -= 1
                self._next_child()

    def _next_child(self) -> None:
        waiting = self._children_waiting
        while waiting and self._children_open < self._limits.max_subagent_streams:
            if self._closed or self.failure is not None:
                waiting.clear()
                return
            session = next(iter(waiting))
            del waiting[session]
            if session not in self._streams and session not in self._routes.detached:
                self._open(session, child=True)

    async def _stream_events(self, stream: _Stream) -> None:
        httpx = self._httpx
        headers = {"Accept": _EVENTS, "Accept-Encoding": "identity", CONNECTION_ID: self.connection_id or ""}
        if stream.session is not None:
            headers[SESSION_ID] = stream.session
        limits = self._limits
        timeout = httpx.Timeout(limits.response_timeout, read=limits.stream_idle_timeout)
        async with self._clients.for_stream() as client:  # over HTTP/2 a connection of its own (RemoteClients)
            request = client.build_request("GET", self._url, headers=headers, timeout=timeout)
            with anyio.fail_after(limits.response_timeout):
                response = await client.send(request, stream=True)
            await self._read_events(stream, response)

    async def _read_events(self, stream: _Stream, response: httpx.Response) -> None:
        """Check the GET's answer, then hand its events to the inbox until it ends; closes ``response``."""
        limits = self._limits
        try:
            if response.status_code != 200:
                body, _ = await read_bounded(response, MAX_ERROR_BODY)
                what = "the connection's event stream" if stream.session is None else f"session {stream.session}"
                data = self._error_data(response.status_code, body)
                raise RemoteHttpError(-32603, self._status_text(response.status_code, what, body), data)
            media = response.headers.get("content-type", "").split(";")[0].strip().lower()
            encoding = response.headers.get("content-encoding", "identity").strip().lower()
            if media != _EVENTS or encoding not in ("", "identity"):
                raise RemoteProtocolError(f"the server at {self.name} sent {media or 'no type'} for an event stream")
            stream.ready.set()
            parser = SseParser(limits.max_message)
            pause = limits.stream_pause
            async for chunk in response.aiter_raw():
                events = parser.feed_runs(chunk)
                if events:
                    frames, size = self._frames(events, stream.session)
                    await self._inbox.put_all(frames, size)
                    if pause and notifications_trickle(chunk):
                        await anyio.sleep(pause)  # a server writing an event at a time: let it write more
        finally:
            with anyio.CancelScope(shield=True):
                await response.aclose()

    def _frames(self, events: list[bytes | EventRun], stream_session: str | None) -> tuple[list[Frame], int]:
        """A read's events as frames for the rpc layer, and how many messages they are. A run of events (UTF-8) goes
        over as one ``LineBlock``, which the rpc layer decodes at once when every event is a typed notification
        (none has an ``id``: nothing for routing) and splits otherwise, the routing facts of its events noted then
        (``_note_all``), before the rpc layer takes any of them; searching every read for what routing needs cost
        more than the rest of the transport's work. The other events are checked all at once when they are
        several: joined by LF they hold none of what ``_routes_nothing`` looks for (an LF is part of none of it)
        exactly when no event does."""
        frames: list[Frame] = []
        size = 0  # the messages in the blocks beyond one each
        single: list[bytes] = []
        for item in events:
            if type(item) is EventRun:
                if single:
                    frames += self._each(single, stream_session)
                    single = []
                data = item.data
                if data.isascii() or is_utf8(data):
                    frames.append(LineBlock(data, item.count, partial(self._note_all, stream_session)))
                    size += item.count - 1
                else:
                    frames += self._each(item.events(), stream_session)
            else:
                single.append(item)  # type: ignore[arg-type]  # an event's data
        if single:
            if not frames:
                return self._each(single, stream_session), len(single)
            frames += self._each(single, stream_session)
        return frames, size + len(frames)

    def _each(self, events: list[bytes], stream_session: str | None) -> list[Frame]:
        if len(events) > 1:
            joined = b"\n".join(events)
            if joined.isascii() and _routes_nothing(joined):
                return events  # type: ignore[return-value]  # list is invariant; the items are fine
        return [self._received(data, stream_session) for data in events]

    def _received(self, data: bytes, stream_session: str | None) -> Frame:
        """An event's data as the frame for the rpc layer, its routing facts noted on the way."""
        (frame,) = check_utf8([data], data)
        if type(frame) is not bytes:
            return frame  # not UTF-8: the rpc layer reports it
        self._note(data, stream_session)
        return data

    def _note_all(self, stream_session: str | None, events: list[bytes]) -> None:
        """A block's events are split for the rpc layer: their routing facts, noted before it takes them."""
        if self._closed or self.failure is not None:
            return  # nothing is routed any more
        for data in events:
            self._note(data, stream_session)

    def _note(self, data: bytes, stream_session: str | None) -> None:
        """The routing facts of one received message (UTF-8), if it has any."""
        if _routes_nothing(data):
            return
        head = read_head(data)
        if head is not None:
            self._routes.received(head, stream_session)
            # A new session's stream opens now (its first use waits for it). A subagent's opens when the client
            # says it tracks the child (follow_session): an agent cannot make it open one for each it announces.
            new = self._routes.new_session(head)
            if new is not None and new not in self._streams and new not in self._routes.detached:
                self._open(new)

    async def _stream_ended(self, stream: _Stream, error: BaseException | None) -> None:
        if self._closed or self.failure is not None:
            return
        if self._streams.get(stream.session) is stream:
            del self._streams[stream.session]
        if stream.session is None:
            reason = (
                error
                if error is not None
                else RemoteTransportError(f"the server at {self.name} closed the connection's event stream")
            )
            stream.error = reason
            self._fail(self._network_error(reason, "the connection's event stream"))
            return
        stream.error = error or RemoteTransportError("the session's event stream closed")
        if isinstance(error, RemoteHttpError) and error.status == 409:
            await self._detach(stream.session, error.data)
        elif isinstance(error, RemoteHttpError) and error.status in ENDS_CONNECTION:
            self._fail(error)
        elif error is None:
            # Lost: its waiting requests can never be answered; the next message for it opens it again.
            for raw_id in self._routes.fail_session(stream.session):
                await self._put(error_answer(raw_id, f"the event stream of session {stream.session} closed"))
        else:
            self._fail(self._network_error(error, f"the event stream of session {stream.session}"))

    async def _detach(self, session: str, data: Any) -> None:
        self._routes.detached[session] = data
        stream = self._streams.pop(session, None)
        if stream is not None:
            stream.scope.cancel()
            stream.ready.set()
        message = f"the session {session} is detached from this connection (HTTP 409); load or resume it"
        for raw_id in self._routes.fail_session(session):
            await self._put(error_answer(raw_id, message, data))

    # -- failing -------------------------------------------------------------------------------------------

    async def _put(self, frame: Frame) -> None:
        """A message of the transport's own (an answer it gives in the server's stead, initialize's answer).
        Never waits for room: the sender may be the rpc layer's writer, which its reader may be waiting for."""
        if isinstance(frame, bytes) and len(frame) > self._limits.max_message:
            frame = OversizedFrame(len(frame))
        self._inbox.put_nowait(frame)

    def _fail(self, error: BaseException) -> None:
        """The transport ends: the rpc layer reads what was received, then the end (and fails what waits)."""
        if self.failure is not None or self._closed:
            return
        self.failure = error
        _log.info("remote connection to %s ended: %s", self.name, error)
        for stream in self._streams.values():
            stream.scope.cancel()
            stream.ready.set()
        self._inbox.close()

    def _network_error(self, error: BaseException, what: str) -> BaseException:
        if isinstance(error, (RemoteHttpError, RemoteTransportError)):
            return error
        if isinstance(error, SseLimitExceeded):
            return RemoteProtocolError(f"{what}: {error}")
        if isinstance(error, (TimeoutError, self._httpx.TimeoutException)):
            return RemoteTransportError(f"{what}: the server at {self.name} did not answer in time")
        text = self.dialer.redact(describe(error))
        return transport_error(error, f"{what}: the connection to {self.name} failed: {text}")

    def _error_data(self, status: int, body: bytes) -> dict[str, Any]:
        text = self.dialer.redact(body[:MAX_ERROR_BODY].decode("utf-8", "replace"))
        return {"status": status, "body": text, "transport": "http"}

    def _status_text(self, status: int, what: str | None, body: bytes) -> str:
        phrase = _phrase(status)
        text = self.dialer.redact(body[:200].decode("utf-8", "replace")).strip()
        return f"{what or 'a message'}: HTTP {status} {phrase} from {self.name}" + (f": {text}" if text else "")


def _phrase(status: int) -> str:
    from http import HTTPStatus

    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _routes_nothing(data: bytes) -> bool:
    """Whether a received message certainly means nothing to routing, without decoding it: only a message with
    an ``id`` (a request or an answer) does. Without a ``\\u`` escape, JSON can spell that key only literally, so
    its absence as bytes proves it (the streamed updates). A backslash is looked for first: one byte is a
    ``memchr``, several bytes a slower search, and most updates hold no escape at all."""
    return b'"id"' not in data and (b"\\" not in data or b"\\u" not in data)
