"""Raw HTTP and WebSocket probes of a remote ACP endpoint, for the transport checks (``checks_remote``).

``probe.Probe`` speaks ACP through a transport that hides the HTTP; these probes send the requests themselves
(status codes, headers, which SSE stream carries what, frame opcodes) with httpx and httpx-ws, so a check can see
each rule of the RFD "Streamable HTTP & WebSocket Transport" on the wire. A probe's client keeps the cookies the
server sets and sends them back, as the RFD asks clients to.

What a probe keeps is bounded, whatever the server sends: a response body up to ``MAX_REPLY`` bytes (the rest is
not read), and of an event stream the first ``MAX_STREAM_MESSAGES`` notifications and as many messages with an
id (answers, requests); the rest are counted (``EventStream.dropped``).
"""

from __future__ import annotations

import contextlib
import json
import tempfile
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from anyio.abc import TaskGroup

from acp_session.errors import RemoteHttpError
from acp_session.transport.remote import RemoteDialer
from acp_session.transport.remote.client import RemoteClients, make_client
from acp_session.transport.remote.sse import SseParser
from acp_session.transport.remote.websocket import upgrade_websocket

from .probe import Fail, v1_offer

__all__ = ["MAX_REPLY", "MAX_STREAM_MESSAGES", "EventStream", "HttpProbe", "Reply", "initialize_params", "rpc"]

JSON = "application/json"
EVENTS = "text/event-stream"
_MAX_EVENT = 8 * 1024 * 1024
MAX_REPLY = 8 * 1024 * 1024
"""Bytes of a response body a probe reads; a longer one is cut there (``Reply.truncated``)."""
MAX_STREAM_MESSAGES = 1000
"""Notifications an event stream keeps, and messages with an id (answers, requests): a check needs a few."""


def _cwd() -> str:
    return tempfile.gettempdir()


def initialize_params() -> dict[str, Any]:
    """A v2 offer as the agent checks make it (v2's shape only)."""
    return v1_offer(2, fs=False, terminal=False)


def rpc(method: str, params: dict[str, Any] | None = None, id: int | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    if id is not None:
        message["id"] = id
    return message


@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes
    http_version: str = "HTTP/1.1"
    truncated: bool = False
    """The body went past ``MAX_REPLY``: only its start was read (and it is not JSON)."""

    def json(self) -> Any:
        if self.truncated:
            return None
        try:
            return json.loads(self.body)
        except ValueError:
            return None


@dataclass
class EventStream:
    """One open GET event stream: the messages it has delivered so far, and whether the server ended it."""

    status: int
    messages: list[dict[str, Any]] = field(default_factory=list)
    ended: anyio.Event = field(default_factory=anyio.Event)
    changed: anyio.Event = field(default_factory=anyio.Event)
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    dropped: int = 0
    """Messages past ``MAX_STREAM_MESSAGES`` of their kind: counted, not kept."""
    _kept: dict[bool, int] = field(default_factory=lambda: {True: 0, False: 0})

    def _add(self, message: Any) -> None:
        if isinstance(message, dict):
            has_id = "id" in message
            if self._kept[has_id] < MAX_STREAM_MESSAGES:
                self._kept[has_id] += 1
                self.messages.append(message)
            else:
                self.dropped += 1
                return
        self.changed.set()
        self.changed = anyio.Event()

    async def wait_for(self, what: str, predicate: Any, timeout: float) -> dict[str, Any]:
        """The first message ``predicate`` accepts (waiting up to ``timeout``), or ``Fail`` naming ``what``."""
        with anyio.move_on_after(timeout):
            while True:
                for message in self.messages:
                    if predicate(message):
                        return message
                if self.ended.is_set():
                    break
                await self.changed.wait()
        dropped = (
            f" ({self.dropped} messages past the first {MAX_STREAM_MESSAGES} were not kept)" if self.dropped else ""
        )
        raise Fail("ACP-HTTP", f"{what}: not seen on this stream within {timeout:g}s{dropped}")

    def close(self) -> None:
        self.scope.cancel()


class HttpProbe:
    """A raw HTTP client of one endpoint (its own cookie jar); ``connection`` once ``initialize`` succeeded."""

    def __init__(self, dialer: RemoteDialer, clients: RemoteClients, tg: TaskGroup, timeout: float) -> None:
        self.dialer = dialer
        self.clients = clients
        self.client = clients.messages
        self.tg = tg
        self.timeout = timeout
        self.url = dialer.request_url
        self.connection: str | None = None
        self.set_cookies: list[str] = []  # every Set-Cookie the server sent
        self._next_id = 100

    def next_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _remember(self, headers: Any) -> None:
        self.set_cookies += headers.get_list("set-cookie")

    def headers(self, session: str | None = None, **extra: str) -> dict[str, str]:
        found = {"content-type": JSON, "accept": f"{JSON}, {EVENTS}"}
        if self.connection is not None:
            found["acp-connection-id"] = self.connection
        if session is not None:
            found["acp-session-id"] = session
        found.update({k.replace("_", "-"): v for k, v in extra.items()})
        return found

    async def post(self, message: Any, headers: dict[str, str] | None = None, *, raw: bytes | None = None) -> Reply:
        body = raw if raw is not None else json.dumps(message).encode()
        return await self._exchange("POST", body, headers or self.headers())

    async def delete(self, headers: dict[str, str] | None = None) -> Reply:
        return await self._exchange("DELETE", None, headers or self.headers())

    async def _exchange(self, method: str, body: bytes | None, headers: dict[str, str]) -> Reply:
        """One request and its answer, of which at most ``MAX_REPLY`` bytes are read."""
        with anyio.fail_after(self.timeout):
            async with self.client.stream(method, self.url, content=body, headers=headers) as response:
                self._remember(response.headers)
                chunks: list[bytes] = []
                size = 0
                async for chunk in response.aiter_bytes():
                    chunks.append(chunk)
                    size += len(chunk)
                    if size > MAX_REPLY:
                        break
                content = b"".join(chunks)
        kept, truncated = content[:MAX_REPLY], len(content) > MAX_REPLY
        return Reply(response.status_code, dict(response.headers), kept, response.http_version, truncated)

    async def get_status(self, headers: dict[str, str]) -> int:
        """A GET's status alone (the stream, if one opens, is closed at once)."""
        with anyio.fail_after(self.timeout):
            async with self.client.stream("GET", self.url, headers=headers) as response:
                self._remember(response.headers)
                return int(response.status_code)

    async def initialize(self) -> Reply:
        reply = await self.post(rpc("initialize", initialize_params(), id=0), {"content-type": JSON, "accept": JSON})
        if reply.status == 200:
            self.connection = reply.headers.get("acp-connection-id")
        return reply

    async def open_stream(self, session: str | None = None) -> EventStream:
        """Open the connection's event stream (or ``session``'s) and read it in the background."""
        headers = {"accept": EVENTS}
        if self.connection is not None:
            headers["acp-connection-id"] = self.connection
        if session is not None:
            headers["acp-session-id"] = session
        opened: anyio.Event = anyio.Event()
        holder: list[EventStream] = []

        async def read() -> None:
            stream = EventStream(0)
            try:
                with stream.scope:
                    # Over HTTP/2 a connection of its own, as the transport's streams (``RemoteClients``).
                    async with (
                        self.clients.for_stream() as client,
                        client.stream("GET", self.url, headers=headers, timeout=None) as response,
                    ):
                        self._remember(response.headers)
                        stream.status = response.status_code
                        holder.append(stream)
                        opened.set()
                        if response.status_code != 200:
                            return
                        parser = SseParser(_MAX_EVENT)
                        async for chunk in response.aiter_raw():
                            for event in parser.feed(chunk):
                                try:
                                    stream._add(json.loads(event.data))
                                except ValueError:
                                    continue
            except Exception:  # the server went away: the stream ended
                pass
            finally:
                if not holder:
                    holder.append(stream)
                stream.ended.set()
                stream.changed.set()
                opened.set()

        self.tg.start_soon(read)
        with anyio.fail_after(self.timeout):
            await opened.wait()
        return holder[0]

    async def post_new_session(self, headers: dict[str, str] | None = None) -> Reply:
        """POST a ``session/new`` (for its status: its answer, if any, comes on a stream)."""
        return await self.post(rpc("session/new", {"cwd": _cwd(), "mcpServers": []}, id=self.next_id()), headers)

    async def new_session(self, cwd: str, stream: EventStream) -> str:
        """``session/new`` (202, answered on ``stream``, the connection's): the new session's id."""
        rid = self.next_id()
        reply = await self.post(rpc("session/new", {"cwd": cwd, "mcpServers": []}, id=rid))
        if reply.status not in (200, 202):
            raise Fail("ACP-HTTP-002", f"session/new was refused with HTTP {reply.status}: {reply.body[:200]!r}")
        answer = await stream.wait_for("the answer to session/new", lambda m: m.get("id") == rid, self.timeout)
        session = (answer.get("result") or {}).get("sessionId")
        if not isinstance(session, str):
            raise Fail("ACP-HTTP-003", f"session/new was not answered with a session id: {answer}")
        return session


@asynccontextmanager
async def http_probe(dialer: RemoteDialer, timeout: float) -> AsyncIterator[HttpProbe]:
    """A raw client of ``dialer``'s endpoint (HTTP/1.1, enough streams for a few sessions); DELETE on exit."""
    http1, http2 = dialer.http_versions()
    async with AsyncExitStack() as stack:
        clients = RemoteClients(dialer, http1=http1, http2=http2, streams=8)
        await stack.enter_async_context(clients.messages)
        # Entered by hand: a task group would wrap the check's own ``Fail`` in an ExceptionGroup.
        tg = anyio.create_task_group()
        await tg.__aenter__()
        probe = HttpProbe(dialer, clients, tg, timeout)
        try:
            yield probe
        finally:
            with anyio.CancelScope(shield=True), anyio.move_on_after(2):
                if probe.connection is not None:
                    with contextlib.suppress(Exception):  # the server may have ended it already
                        await probe.delete()  # its answer read as any other (at most MAX_REPLY bytes)
            tg.cancel_scope.cancel()
            await tg.__aexit__(None, None, None)


@asynccontextmanager
async def ws_probe(dialer: RemoteDialer, timeout: float) -> AsyncIterator[tuple[Any, Any]]:
    """A raw WebSocket to ``dialer``'s endpoint: ``(session, upgrade response)``."""
    import httpx_ws

    async with make_client(dialer, http1=True, http2=False, streams=1) as client:
        try:  # the whole upgrade within the dialer's connect_timeout (the transport's own upgrade)
            response = await upgrade_websocket(dialer, client)
        except RemoteHttpError as exc:
            raise Fail("ACP-WS-001", f"the WebSocket upgrade was refused with HTTP {exc.status}") from None
        try:
            session = httpx_ws.AsyncWebSocketSession(
                response.extensions["network_stream"], keepalive_ping_interval_seconds=None, response=response
            )
            ws = await session.__aenter__()
            try:
                yield ws, response
            finally:
                with contextlib.suppress(Exception):  # the peer may be gone already
                    await session.__aexit__(None, None, None)
        finally:
            with anyio.CancelScope(shield=True):
                await response.aclose()
