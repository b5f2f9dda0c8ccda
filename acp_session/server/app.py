"""Any ACP endpoint as an ASGI app: ACP over Streamable HTTP and WebSocket on one endpoint, ``/acp``.

``POST`` carries the client's messages (``initialize`` answered in the 200 body with ``Acp-Connection-Id``,
everything else 202), ``GET`` with ``Accept: text/event-stream`` opens the connection's SSE stream or, with
``Acp-Session-Id``, a session's, ``DELETE`` ends the connection, and ``GET`` + ``Upgrade: websocket`` is the same
conversation over one socket. A request (the upgrade included) whose ``Origin`` is not allowed gets 403 before
anything else (``origins``), then one without the server's token 401 (``auth``). The rules are in ``rules``, a
connection's state in ``connection``, the caps on what clients make the server hold in ``limits``; an ASGI server
(hypercorn, see ``serve``) does the HTTP. Each connection is served by the application's handler, run in the
server's task group.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio
from anyio.abc import TaskGroup

from .._counted_log import CountedLog
from .auth import BearerToken
from .connection import ConnectionHandler, ConnectionOverflow, RemoteConnection, StreamBusy, render_events
from .hooks import ServerHooks
from .limits import DEFAULT_LIMITS, RETRY_AFTER, ByteBudget, RequestBody, ServerLimits
from .origins import OriginPolicy
from .rules import BadRequest, Inbound, check_get, check_post, check_post_headers, parse_post
from .websocket import serve_websocket

__all__ = ["COOKIE_NAME", "COOKIE_REFUSAL", "ENDPOINT", "UNAUTHORIZED", "AcpAsgiApp", "refuse_upgrade"]

_log = logging.getLogger("acp_session.server")

ENDPOINT = "/acp"
COOKIE_NAME = "acp_affinity"
"""A sticky-routing cookie set on initialize (and the WebSocket upgrade), so clients' cookie jars are exercised."""
COOKIE_REFUSAL = f"Missing or wrong {COOKIE_NAME} cookie (the server requires it)"
"""The 400's reason when ``--require-cookie`` refuses a request (over HTTP or at the WebSocket upgrade)."""
KEEP_ALIVE_SECONDS = 15.0
INITIALIZE_TIMEOUT = 30.0
UNAUTHORIZED = "Unauthorized: this server needs Authorization: Bearer <token>"
"""The 401's body when a request lacks the server's token (or has another)."""
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


def _all(scope: Scope, name: bytes) -> list[bytes]:
    """Every value of the header ``name`` (lower-case) in the request."""
    return [value for key, value in scope.get("headers", []) if key.lower() == name]


def _origins(scope: Scope) -> list[str]:
    """Every ``Origin`` header of the request (a browser sends one; a request with several is judged by each)."""
    return [value.decode("latin-1") for value in _all(scope, b"origin")]


def _peer(scope: Scope) -> tuple[str, int] | None:
    client = scope.get("client")
    if isinstance(client, (list, tuple)) and len(client) == 2:
        return str(client[0]), int(client[1])
    return None


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
    raw += _status_headers(status)
    if body:
        raw.append((b"content-type", content_type.encode("latin-1")))
    raw.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def _closing(scope: Scope, drained: bool) -> list[tuple[str, str]]:
    """``Connection: close`` when the request's body was not read whole (HTTP/1.x: hypercorn closes it then)."""
    return [] if drained or scope.get("http_version") not in ("1.0", "1.1") else [("connection", "close")]


async def _refuse(scope: Scope, body: RequestBody, send: Send, refusal: BadRequest, headers: Any = ()) -> None:
    """Answer a request with ``refusal`` once its body is read (``RequestBody``); ``Connection: close`` when the
    body could not be (too large, or not sent), so the client does not send its next request there."""
    headers = [*headers, *_closing(scope, await body.drain())]
    if refusal.json_body is not None:
        await _respond(send, refusal.status, refusal.json_body, "application/json", headers)
    else:
        await _respond(send, refusal.status, refusal.reason.encode(), headers=headers)


def _status_headers(status: int) -> list[tuple[bytes, bytes]]:
    """What a refusal's status needs beside its body: when to retry (503), how to authenticate (401)."""
    if status == 503:
        return [(b"retry-after", RETRY_AFTER.encode())]
    if status == 401:
        return [(b"www-authenticate", b"Bearer")]
    return []


async def refuse_upgrade(scope: Scope, receive: Receive, send: Send, status: int, reason: str) -> None:
    """Answer a WebSocket upgrade with an HTTP error instead of the 101 (the ASGI denial response, so the client
    reads the status and ``reason``; a server without it closes with 1008, or 1013 for a 503)."""
    if (await receive())["type"] != "websocket.connect":
        return
    if "websocket.http.response" not in scope.get("extensions", {}):
        await send({"type": "websocket.close", "code": 1013 if status == 503 else 1008})
        return
    body = reason.encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"), (b"content-length", str(len(body)).encode())]
    headers += _status_headers(status)
    await send({"type": "websocket.http.response.start", "status": status, "headers": headers})
    await send({"type": "websocket.http.response.body", "body": body})


class AcpAsgiApp:
    """The ASGI application: connections by id, each served by ``handler`` in the task group ``tg`` (they
    outlive the request that made them). ``serve``/``open_server`` make one from ``ServerOptions``; an
    application that runs its own ASGI server can mount one itself (it must send the lifespan events, or none)."""

    def __init__(
        self,
        handler: ConnectionHandler,
        tg: TaskGroup,
        *,
        require_cookie: bool = False,
        origins: OriginPolicy | None = None,
        limits: ServerLimits = DEFAULT_LIMITS,
        token: BearerToken | None = None,
        hooks: ServerHooks | None = None,
    ) -> None:
        self.handler = handler
        self.tg = tg
        self.hooks = hooks or ServerHooks()
        """Where a test server breaks a rule on purpose (``ServerHooks``); the default follows them all."""
        self.token = token
        """The bearer token every request must carry (None: no token needed)."""
        self.limits = limits
        self.budget = ByteBudget(limits.max_buffered_bytes)
        """The bytes of client messages held (``ServerLimits.max_buffered_bytes``), shared by all connections."""
        self.log = CountedLog(_log, "the clients")
        """What clients can make the server log once per request (refusals, binary frames): counted per kind."""
        self.pending_sockets = 0
        """WebSockets upgraded that have not sent ``initialize`` yet (they count as live and not started)."""
        self.require_cookie = require_cookie
        self.origins = origins or OriginPolicy()
        """Who may call (``origins``); by default only clients that send no ``Origin`` (no browser page)."""
        self.connections: dict[str, RemoteConnection] = {}
        self.issued_cookies: OrderedDict[str, None] = OrderedDict()
        """The affinity cookies set lately (``ISSUED_COOKIES`` at most), for ``wrong_upgrade_cookie``."""

    def cookie_header(self, conn: RemoteConnection) -> tuple[str, str]:
        self.issued_cookies[conn.cookie] = None
        while len(self.issued_cookies) > ISSUED_COOKIES:
            self.issued_cookies.popitem(last=False)
        return ("set-cookie", self.hooks.affinity_cookie(COOKIE_NAME, conn.cookie))

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
                self.log.info(
                    "requests refused for their Origin", "refused a request from Origin %r (not allowed)", shown
                )
                return f"Forbidden: Origin {shown} is not allowed (--allow-origin {shown} would allow it)"
        return None

    def unauthorized(self, scope: Scope) -> bool:
        """Whether the request lacks the server's token (counted in the log, the token never shown)."""
        if self.token is None or self.token.allows(_all(scope, b"authorization")):
            return False
        self.log.info("requests refused without the token", "refused a request without the server's token (401)")
        return True

    def capacity_refusal(self) -> str | None:
        """Why one more connection would break a cap (the 503's body), or None when it may start."""
        limits = self.limits
        live = len(self.connections) + self.pending_sockets
        if live >= limits.max_connections:
            return (
                f"Service Unavailable: the server has {live} connections, its limit (--max-connections "
                f"{limits.max_connections}); retry later"
            )
        pending = self.pending_sockets + sum(1 for conn in self.connections.values() if not conn.started)
        if pending >= limits.max_pending:
            return (
                f"Service Unavailable: {pending} connections have not started yet, the limit (--max-pending "
                f"{limits.max_pending}; each has {limits.pending_timeout:g} s to open its stream); retry later"
            )
        return None

    def new_connection(
        self, scope: Scope, websocket_sink: Callable[[list[bytes]], Awaitable[None]] | None = None
    ) -> RemoteConnection:
        """A connection for the request ``scope`` opens (the ``initialize`` POST, or a WebSocket upgrade)."""
        return RemoteConnection(
            websocket_sink,
            self.hooks,
            self.limits,
            self.budget,
            peer=_peer(scope),
            headers=_headers(scope),
            log=self.log,
        )

    async def start_connection(self, conn: RemoteConnection) -> None:
        """Run the handler on ``conn`` in the server's task group (it outlives the request that made it)."""
        self.connections[conn.connection_id] = conn
        await self.tg.start(self._run, conn)

    async def _run(self, conn: RemoteConnection, *, task_status: anyio.abc.TaskStatus[None]) -> None:
        try:
            await conn.run(self.handler, task_status=task_status)
        finally:
            self.connections.pop(conn.connection_id, None)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        refused = self.origin_refusal(scope)
        if kind == "websocket":
            if refused is not None:  # before anything else: such a request must have no effect at all
                await refuse_upgrade(scope, receive, send, 403, refused)
            elif self.unauthorized(scope):
                await refuse_upgrade(scope, receive, send, 401, UNAUTHORIZED)
            elif scope.get("path") != ENDPOINT:
                await send({"type": "websocket.close", "code": 1008})
            elif self.wrong_upgrade_cookie(_headers(scope)):
                await refuse_upgrade(scope, receive, send, 400, COOKIE_REFUSAL)
            elif (busy := self.capacity_refusal()) is not None:
                self.log.info("upgrades refused at a cap", "refused a WebSocket upgrade: %s", busy)
                await refuse_upgrade(scope, receive, send, 503, busy)
            else:
                await serve_websocket(self, scope, receive, send)
            return
        body = RequestBody(receive, _headers(scope).get("content-length"))
        try:
            if refused is not None:
                raise BadRequest(403, refused)
            if self.unauthorized(scope):
                raise BadRequest(401, UNAUTHORIZED)
            if scope.get("path") != ENDPOINT:
                raise BadRequest(404, "Not Found: the ACP endpoint is " + ENDPOINT)
            await self._http(scope, body, send)
        except BadRequest as refusal:
            await _refuse(scope, body, send, refusal)

    @staticmethod
    async def _lifespan(receive: Receive, send: Send) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await send({"type": "lifespan.shutdown.complete"})
                return

    async def _http(self, scope: Scope, body: RequestBody, send: Send) -> None:
        headers = _headers(scope)
        method = scope.get("method")
        if method == "POST":
            await self._post(scope, headers, body, send)
        elif method == "GET":
            await self._get(headers, body, send)
        elif method == "DELETE":
            conn = self._connection(headers)
            drained = await body.drain()
            conn.end()
            with anyio.move_on_after(5):
                await conn.ended.wait()
            await _respond(send, 202, headers=_closing(scope, drained))
        else:
            allow = [("allow", "GET, POST, DELETE")]
            await _refuse(scope, body, send, BadRequest(405, "Method Not Allowed"), allow)

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

    async def _read_body(self, headers: dict[str, str], body: RequestBody) -> bytes:
        """The POST body, held in the server's budget (the caller gives it back, or hands it to a connection);
        a wrong media type (415), an oversized body (413) or one the budget has no room for (503) is refused
        after reading it on (``_refuse``), so the client sees the answer rather than a reset. (Answering before
        the body is read also makes hypercorn close a TLS connection the client is still writing to, and log
        the SSL error as a traceback.)"""
        check_post_headers(headers, None, lax=not self.hooks.check_media_types)  # 415 first
        check_post_headers(headers, body.declared, lax=True)  # 413 for the declared size
        held = body.declared or 0  # a declared body is let in whole or not at all
        if not self.budget.take(held):
            raise BadRequest(503, self._busy())
        chunks: list[bytes] = []
        try:
            while not body.complete:
                message = await body()
                if body.disconnected:
                    raise BadRequest(400, "the client went away")
                chunks.append(message.get("body", b""))
                check_post_headers(headers, body.read, lax=True)  # 413 for what came
                if body.read > held:  # more than declared (or nothing was)
                    if not self.budget.take(body.read - held):
                        raise BadRequest(503, self._busy())
                    held = body.read
        except BaseException:
            chunks.clear()  # the refusal's traceback keeps this frame while the rest of the body is read
            self.budget.give_back(held)
            raise
        raw = b"".join(chunks)
        self.budget.give_back(held - len(raw))
        return raw

    def _busy(self) -> str:
        limit = self.limits.max_buffered_bytes
        return (
            f"Service Unavailable: the server holds {self.budget.used} bytes of client messages, its limit "
            f"(--max-buffered-bytes {limit}); retry later"
        )

    async def _post(self, scope: Scope, headers: dict[str, str], body: RequestBody, send: Send) -> None:
        raw = await self._read_body(headers, body)
        held = len(raw)  # in the budget until a connection takes the message
        try:
            message = parse_post(headers, raw)
            if isinstance(message, Inbound):
                refusal = self.capacity_refusal()
                if refusal is not None:
                    self.log.info("initializes refused at a cap", "refused an initialize: %s", refusal)
                    raise BadRequest(503, refusal)
                conn = self.new_connection(scope)
                await self.start_connection(conn)
                await conn.feed(message)
                held = 0
                await self._answer_initialize(conn, send)
                return
            conn = self._connection(headers)
            routes = conn.routes.client_response_routes
            inbound = check_post(headers, message, raw, routes, check_session=self.hooks.check_session_ids)
            try:
                await conn.feed(inbound)
            except anyio.ClosedResourceError:
                raise BadRequest(404, "Unknown Acp-Connection-Id (the connection ended)") from None
            held = 0
        finally:
            self.budget.give_back(held)
        await _respond(send, 202)

    async def _answer_initialize(self, conn: RemoteConnection, send: Send) -> None:
        answer = None
        with anyio.move_on_after(INITIALIZE_TIMEOUT):
            answer = await conn.initial_answer()
        if answer is None:
            conn.end()
            raise BadRequest(503, "the agent did not answer initialize")
        extra = [("acp-connection-id", conn.connection_id), self.cookie_header(conn)]
        await _respond(send, 200, answer, "application/json", extra)

    async def _get(self, headers: dict[str, str], receive: RequestBody, send: Send) -> None:
        _, session_id = check_get(headers, lax=not self.hooks.check_media_types)
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
                        frames = await stream.take(KEEP_ALIVE_SECONDS)
                    except anyio.EndOfStream:
                        break
                    event = b":\n\n" if frames is None else render_events(frames)
                    await send({"type": "http.response.body", "body": event, "more_body": True})
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                tg.cancel_scope.cancel()
        finally:
            stream.release()
            if session_id is None and self.hooks.end_when_stream_dropped:
                # The connection stream is the client's lifeline: once it is gone, so is the connection.
                conn.end()
