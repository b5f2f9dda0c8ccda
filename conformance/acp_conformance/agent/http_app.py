"""The reference agent as an ASGI app: ACP over Streamable HTTP and WebSocket on one endpoint, ``/acp``.

``POST`` carries the client's messages (``initialize`` answered in the 200 body with ``Acp-Connection-Id``,
everything else 202), ``GET`` with ``Accept: text/event-stream`` opens the connection's SSE stream or, with
``Acp-Session-Id``, a session's, ``DELETE`` ends the connection, and ``GET`` + ``Upgrade: websocket`` is the same
conversation over one socket. A request (the upgrade included) whose ``Origin`` is not allowed gets 403 before
anything else (``origins``). The rules are in ``remote_rules``, a connection's state in ``remote_connection``;
an ASGI server (hypercorn, see ``listen``) does the HTTP.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio
import msgspec

from .origins import OriginPolicy
from .remote_connection import ConnectionOverflow, RemoteConnection, StreamBusy
from .remote_rules import BadRequest, Inbound, check_get, check_post, check_post_headers, parse_post
from .server import AgentOptions
from .shared import SharedSessions
from .websocket import serve_websocket

__all__ = ["COOKIE_NAME", "COOKIE_REFUSAL", "ENDPOINT", "AcpHttpApp", "refuse_upgrade"]

_log = logging.getLogger("acp_conformance.agent")

ENDPOINT = "/acp"
COOKIE_NAME = "acp_affinity"
"""A sticky-routing cookie set on initialize (and the WebSocket upgrade), so clients' cookie jars are exercised."""
COOKIE_REFUSAL = f"Missing or wrong {COOKIE_NAME} cookie (the server requires it)"
"""The 400's reason when ``--require-cookie`` refuses a request (over HTTP or at the WebSocket upgrade)."""
KEEP_ALIVE_SECONDS = 15.0
INITIALIZE_TIMEOUT = 30.0
DRAIN_LIMIT = 64 * 1024 * 1024
"""An oversized body is read on (and dropped) up to this many bytes before the 413 goes out."""
ISSUED_COOKIES = 65536
"""Affinity cookies remembered (the newest), so ``--require-cookie`` can tell one this server set on a WebSocket
upgrade."""

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def _headers(scope: Scope) -> dict[str, str]:
    """The request's headers, names lower-cased (a repeated header keeps its last value)."""
    return {name.decode("latin-1").lower(): value.decode("latin-1") for name, value in scope.get("headers", [])}


def sse_event(frame: bytes) -> bytes:
    """One message as one SSE event: a single ``data:`` line, so its JSON text must have no line break."""
    frame = frame.strip()
    if b"\n" in frame or b"\r" in frame:
        frame = msgspec.json.encode(msgspec.json.decode(frame))  # whitespace between tokens only
    return b"data: " + frame + b"\n\n"


def _origins(scope: Scope) -> list[str]:
    """Every ``Origin`` header of the request (a browser sends one; a request with several is judged by each)."""
    return [value.decode("latin-1") for name, value in scope.get("headers", []) if name.lower() == b"origin"]


def _cookies(headers: dict[str, str]) -> dict[str, str]:
    jar: dict[str, str] = {}
    for part in headers.get("cookie", "").split(";"):
        name, sep, value = part.strip().partition("=")
        if sep:
            jar[name] = value
    return jar


async def _respond(
    send: Send, status: int, body: bytes = b"", content_type: str = "text/plain; charset=utf-8", headers: Any = ()
) -> None:
    raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers]
    if body:
        raw.append((b"content-type", content_type.encode("latin-1")))
    raw.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


async def refuse_upgrade(scope: Scope, receive: Receive, send: Send, status: int, reason: str) -> None:
    """Answer a WebSocket upgrade with an HTTP error instead of the 101 (the ASGI denial response, so the client
    reads the status and ``reason``; a server without it answers 403 with no body)."""
    if (await receive())["type"] != "websocket.connect":
        return
    if "websocket.http.response" not in scope.get("extensions", {}):
        await send({"type": "websocket.close", "code": 1008})
        return
    body = reason.encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    await send({"type": "websocket.http.response.start", "status": status, "headers": headers})
    await send({"type": "websocket.http.response.body", "body": body})


class AcpHttpApp:
    """The ASGI application: connections by id, all sharing the server's sessions (``SharedSessions``)."""

    def __init__(
        self,
        shared: SharedSessions,
        options: AgentOptions,
        *,
        require_cookie: bool = False,
        origins: OriginPolicy | None = None,
    ) -> None:
        self.shared = shared
        self.options = options
        self.require_cookie = require_cookie
        self.origins = origins or OriginPolicy()
        """Who may call (``origins``); by default only clients that send no ``Origin`` (no browser page)."""
        self.connections: dict[str, RemoteConnection] = {}
        self.issued_cookies: OrderedDict[str, None] = OrderedDict()
        """The affinity cookies set lately (``ISSUED_COOKIES`` at most), for ``wrong_upgrade_cookie``."""

    def broken(self, mode: str) -> bool:
        return mode in self.options.broken

    def cookie_header(self, conn: RemoteConnection) -> tuple[str, str]:
        path = "/elsewhere" if self.broken("drop-cookies") else "/"
        self.issued_cookies[conn.cookie] = None
        while len(self.issued_cookies) > ISSUED_COOKIES:
            self.issued_cookies.popitem(last=False)
        return ("set-cookie", f"{COOKIE_NAME}={conn.cookie}; Path={path}; HttpOnly; SameSite=Lax")

    def wrong_upgrade_cookie(self, headers: dict[str, str]) -> bool:
        """``--require-cookie`` on a WebSocket upgrade, the one HTTP request of its connection: like an HTTP
        ``initialize`` it starts a connection, so no cookie is needed (a first visit has none, and the 101 sets
        one); a client that re-dials returns the cookie of its last connection, and an ``acp_affinity`` cookie
        this server never set (forged, or another server's) is refused as the HTTP side refuses a wrong one."""
        if not self.require_cookie:
            return False
        cookie = _cookies(headers).get(COOKIE_NAME)
        return cookie is not None and cookie not in self.issued_cookies

    def origin_refusal(self, scope: Scope) -> str | None:
        """Why the request's ``Origin`` is refused (the 403's body), or None when it may go on."""
        for origin in _origins(scope):
            if not self.origins.allows(origin):
                shown = origin[:200].encode("ascii", "replace").decode()
                _log.info("refused a request from Origin %r (not allowed)", shown)
                return f"Forbidden: Origin {shown} is not allowed (--allow-origin {shown} would allow it)"
        return None

    async def start_connection(self, conn: RemoteConnection) -> None:
        """Run ``conn``'s agent in the server's task group (it outlives the request that made it)."""
        self.connections[conn.connection_id] = conn
        await self.shared.tg.start(self._run, conn)

    async def _run(self, conn: RemoteConnection, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        try:
            await conn.run(self.shared, self.options, task_status=task_status)
        finally:
            self.connections.pop(conn.connection_id, None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        refused = self.origin_refusal(scope)
        if refused is not None:  # before anything else: such a request must have no effect at all
            if kind == "http":
                await _respond(send, 403, refused.encode())
            else:
                await refuse_upgrade(scope, receive, send, 403, refused)
            return
        if scope.get("path") != ENDPOINT:
            if kind == "http":
                await _respond(send, 404, b"Not Found: the ACP endpoint is " + ENDPOINT.encode())
            else:
                await send({"type": "websocket.close", "code": 1008})
            return
        if kind == "websocket":
            if self.wrong_upgrade_cookie(_headers(scope)):
                await refuse_upgrade(scope, receive, send, 400, COOKIE_REFUSAL)
                return
            await serve_websocket(self, scope, receive, send)
            return
        try:
            await self._http(scope, receive, send)
        except BadRequest as refusal:
            if refusal.json_body is not None:
                await _respond(send, refusal.status, refusal.json_body, "application/json")
            else:
                await _respond(send, refusal.status, refusal.reason.encode())

    @staticmethod
    async def _lifespan(receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = _headers(scope)
        method = scope.get("method")
        if method == "POST":
            await self._post(headers, receive, send)
        elif method == "GET":
            await self._get(headers, receive, send)
        elif method == "DELETE":
            conn = self._connection(headers)
            conn.end()
            with anyio.move_on_after(5):
                await conn.ended.wait()
            await _respond(send, 202)
        else:
            await _respond(send, 405, b"Method Not Allowed", headers=[("allow", "GET, POST, DELETE")])

    def _connection(self, headers: dict[str, str]) -> RemoteConnection:
        connection_id = headers.get("acp-connection-id")
        if not connection_id:
            raise BadRequest(400, "Missing Acp-Connection-Id")
        conn = self.connections.get(connection_id)
        if conn is None:
            raise BadRequest(404, "Unknown Acp-Connection-Id")
        if conn.websocket:
            raise BadRequest(400, "that Acp-Connection-Id is a WebSocket connection; send on its socket")
        if self.require_cookie and _cookies(headers).get(COOKIE_NAME) != conn.cookie:
            raise BadRequest(400, COOKIE_REFUSAL)
        return conn

    async def _read_body(self, headers: dict[str, str], receive: Receive) -> bytes:
        """The POST body; a wrong media type (415) or an oversized body (413) is refused after reading it on, so
        the client sees the answer rather than a reset, unless it goes past ``DRAIN_LIMIT``. (Answering before
        the body is read also makes hypercorn close a TLS connection the client is still writing to, and log
        the SSL error as a traceback.)"""
        length = headers.get("content-length")
        declared = int(length) if length and length.isdigit() else None
        refused: BadRequest | None = None
        try:
            check_post_headers(headers, None, lax=self.broken("lax-media-types"))  # 415 first
        except BadRequest as refusal:
            refused = refusal
        if declared is not None and declared > DRAIN_LIMIT:  # too big to read on: refused at once
            if refused is not None:
                raise refused
            check_post_headers(headers, declared, lax=True)  # the 413
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise BadRequest(400, "the client went away")
            chunk = message.get("body", b"")
            size += len(chunk)
            if refused is None:
                try:
                    check_post_headers(headers, size, lax=True)
                except BadRequest as refusal:
                    refused = refusal
            if refused is not None:
                chunks = []
                if size > DRAIN_LIMIT:
                    raise refused
            else:
                chunks.append(chunk)
            if not message.get("more_body", False):
                if refused is not None:
                    raise refused
                return b"".join(chunks)

    async def _post(self, headers: dict[str, str], receive: Receive, send: Send) -> None:
        body = await self._read_body(headers, receive)
        message = parse_post(headers, body)
        if isinstance(message, Inbound):
            await self._initialize(message, send)
            return
        conn = self._connection(headers)
        routes = conn.routes.client_response_routes
        inbound = check_post(headers, message, body, routes, check_session=not self.broken("no-session-check"))
        try:
            await conn.feed(inbound)
        except anyio.ClosedResourceError:
            raise BadRequest(404, "Unknown Acp-Connection-Id (the connection ended)") from None
        await _respond(send, 202)

    async def _initialize(self, inbound: Inbound, send: Send) -> None:
        conn = RemoteConnection(broken=self.options.broken)
        await self.start_connection(conn)
        await conn.feed(inbound)
        answer = None
        with anyio.move_on_after(INITIALIZE_TIMEOUT):
            answer = await conn.initial_answer()
        if answer is None:
            conn.end()
            raise BadRequest(503, "the agent did not answer initialize")
        extra = [("acp-connection-id", conn.connection_id), self.cookie_header(conn)]
        await _respond(send, 200, answer, "application/json", extra)

    async def _get(self, headers: dict[str, str], receive: Receive, send: Send) -> None:
        _, session_id = check_get(headers, lax=self.broken("lax-media-types"))
        conn = self._connection(headers)
        try:
            stream = conn.stream_for(session_id)
        except StreamBusy:
            raise BadRequest(409, "Conflict: this stream already has a reader") from None
        except ConnectionOverflow:
            raise BadRequest(400, "too many session streams on one connection; the connection has ended") from None
        try:
            response_headers = [
                (b"content-type", b"text/event-stream"),
                (b"cache-control", b"no-cache"),
                (b"x-accel-buffering", b"no"),
            ]
            await send({"type": "http.response.start", "status": 200, "headers": response_headers})
            await send({"type": "http.response.body", "body": b":\n\n", "more_body": True})
            async with anyio.create_task_group() as tg:

                async def until_gone() -> None:
                    while (await receive())["type"] != "http.disconnect":
                        pass
                    tg.cancel_scope.cancel()

                tg.start_soon(until_gone)
                while True:
                    try:
                        frame = await stream.next(KEEP_ALIVE_SECONDS)
                    except anyio.EndOfStream:
                        break
                    event = b":\n\n" if frame is None else sse_event(frame)
                    await send({"type": "http.response.body", "body": event, "more_body": True})
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                tg.cancel_scope.cancel()
        finally:
            stream.release()
            if session_id is None and not self.broken("keep-dropped"):
                # The connection stream is the client's lifeline: once it is gone, so is the connection.
                conn.end()
