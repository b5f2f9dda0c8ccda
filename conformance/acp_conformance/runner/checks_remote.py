"""The remote transport's rules (the RFD "Streamable HTTP & WebSocket Transport"), checked on the wire.

``acp-conformance --url`` runs these beside the agent checks: each opens its own connection with raw probes
(``remote_probe``) and judges one rule, so a server that breaks a rule fails that row and no other. Ids are ours
(ACP-HTTP-NNN, ACP-WS-NNN): the official kit's registries have no remote transport requirements.
"""

from __future__ import annotations

import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from typing import Any, Literal
from urllib.parse import urlsplit

import anyio

from acp_session.transport.remote import RemoteDialer

from .outcomes import Fail, NotApplicable
from .remote_probe import EventStream, HttpProbe, Reply, http_probe, initialize_params, rpc, ws_probe
from .tiers import REMOTE_CLASSIFICATIONS, Classification, Tier

__all__ = ["REMOTE_CHECKS", "RemoteCheck", "RemoteContext", "remote_checks_for"]

Profile = Literal["http", "websocket"]
M, A, INFO = Tier.MANDATORY, Tier.ADVISORY, Tier.INFORMATIONAL


@dataclass
class RemoteContext:
    dialer: RemoteDialer
    timeout: float
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def http(self) -> Any:
        return http_probe(self.dialer, self.timeout)

    def warn(self, rule: str, message: str) -> None:
        self.warnings.append(f"{rule}: {message}")

    def note(self, message: str) -> None:
        self.notes.append(message)


RemoteFn = Callable[[RemoteContext], Awaitable[str | None]]


@dataclass(frozen=True)
class RemoteCheck:
    id: str
    title: str
    rule: str  # our id, ACP-HTTP-NNN / ACP-WS-NNN
    tier: Tier
    profile: Profile
    fn: RemoteFn


REMOTE_CHECKS: list[RemoteCheck] = []


def _check(id: str, title: str, rule: str, tier: Tier, profile: Profile) -> Callable[[RemoteFn], RemoteFn]:
    def register(fn: RemoteFn) -> RemoteFn:
        REMOTE_CHECKS.append(RemoteCheck(id, title, rule, tier, profile, fn))
        REMOTE_CLASSIFICATIONS[id] = Classification(tier)
        return fn

    return register


def remote_checks_for(profile: str) -> list[RemoteCheck]:
    return [c for c in REMOTE_CHECKS if c.profile == profile]


def _cwd() -> str:
    return tempfile.gettempdir()


def expect_status(status: int, wanted: int, rule: str, what: str) -> None:
    """``Fail`` unless the server answered ``what`` (a request, in words) with ``wanted``."""
    if status != wanted:
        raise Fail(rule, f"{what} was answered HTTP {status}, not {wanted}")


async def _until(condition: Callable[[], Awaitable[bool]], timeout: float, every: float) -> bool:
    """Probe ``condition`` every ``every`` seconds until it holds (True) or ``timeout`` has passed (False)."""
    with anyio.move_on_after(timeout):
        while not await condition():
            await anyio.sleep(every)
        return True
    return False


async def _connected(p: HttpProbe, rule: str = "ACP-HTTP-001") -> EventStream:
    """initialize, then the connection's event stream (what every HTTP check starts with)."""
    reply = await p.initialize()
    if reply.status != 200 or p.connection is None:
        raise Fail(rule, f"initialize was answered HTTP {reply.status} (connection id {p.connection!r})")
    stream = await p.open_stream()
    if stream.status != 200:
        raise Fail(rule, f"the connection's event stream (GET) was answered HTTP {stream.status}")
    return stream


# -- Streamable HTTP ---------------------------------------------------------------------------------------


@_check("http-initialize", "initialize: 200, the answer as body, Acp-Connection-Id", "ACP-HTTP-001", M, "http")
async def http_initialize(ctx: RemoteContext) -> str | None:
    async with ctx.http() as p:
        reply = await p.initialize()
        expect_status(reply.status, 200, "ACP-HTTP-001", "POST initialize")
        if not p.connection:
            raise Fail("ACP-HTTP-001", "the initialize response has no Acp-Connection-Id header")
        body = reply.json()
        if not isinstance(body, dict) or body.get("id") != 0 or not isinstance(body.get("result"), dict):
            raise Fail("ACP-HTTP-001", f"the initialize response body is not its JSON-RPC answer: {reply.body[:200]!r}")
        return f"protocol version {body['result'].get('protocolVersion')!r}"


@_check("http-accepted", "other POSTs: 202 Accepted, the answer on a stream", "ACP-HTTP-002", M, "http")
async def http_accepted(ctx: RemoteContext) -> str | None:
    async with ctx.http() as p:
        await _connected(p)
        reply = await p.post_new_session()
        expect_status(reply.status, 202, "ACP-HTTP-002", "POST session/new")
        return None


@_check("http-connection-stream", "session/new answered on the connection's stream", "ACP-HTTP-003", M, "http")
async def http_connection_stream(ctx: RemoteContext) -> str | None:
    async with ctx.http() as p:
        stream = await _connected(p)
        await p.new_session(_cwd(), stream)
        return None


def _for_session(session: str) -> Callable[[dict[str, Any]], bool]:
    return lambda m: isinstance(m.get("params"), dict) and m["params"].get("sessionId") == session


@_check(
    "http-session-stream",
    "a session's updates, the agent's requests and session-scoped answers on its stream",
    "ACP-HTTP-004",
    M,
    "http",
)
async def http_session_stream(ctx: RemoteContext) -> str | None:
    async with ctx.http() as p:
        connection = await _connected(p)
        session = await p.new_session(_cwd(), connection)
        own = await p.open_stream(session)
        expect_status(own.status, 200, "ACP-HTTP-004", "the session's event stream (GET)")
        rid = p.next_id()
        prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "/permission hello"}]}
        reply = await p.post(rpc("session/prompt", prompt, id=rid), p.headers(session))
        expect_status(reply.status, 202, "ACP-HTTP-004", "POST session/prompt")
        asked = False

        async def prompt_answered() -> bool:
            """Answer any permission request, wherever it came; whether the prompt is answered."""
            nonlocal asked
            for m in list(own.messages) + list(connection.messages):
                if m.get("method") == "session/request_permission" and "id" in m and not asked:
                    asked = True
                    if m not in own.messages:
                        raise Fail("ACP-HTTP-004", "session/request_permission came on the connection's stream")
                    answer = {"jsonrpc": "2.0", "id": m["id"], "result": {"outcome": {"outcome": "cancelled"}}}
                    status = (await p.post(answer, p.headers(session))).status
                    expect_status(status, 202, "ACP-HTTP-004", "the POST of the permission answer")
            return any(m.get("id") == rid and "method" not in m for m in own.messages + connection.messages)

        await _until(prompt_answered, ctx.timeout, every=0.02)
        answered = [m for m in own.messages + connection.messages if m.get("id") == rid and "method" not in m]
        if not answered:
            raise Fail("ACP-HTTP-004", f"session/prompt was not answered within {ctx.timeout:g}s")
        if answered[0] not in own.messages:
            raise Fail("ACP-HTTP-004", "the answer to session/prompt came on the connection's stream")
        strays = [m for m in connection.messages if _for_session(session)(m)]
        if strays:
            raise Fail("ACP-HTTP-004", f"{strays[0].get('method')} for the session came on the connection's stream")
        if not any(m.get("method") == "session/update" for m in own.messages):
            ctx.note("the agent sent no session/update during the turn")
        return "the agent asked permission on the session's stream" if asked else None


@_check("http-session-header", "400 for a missing or mismatched Acp-Session-Id", "ACP-HTTP-005", M, "http")
async def http_session_header(ctx: RemoteContext) -> str | None:
    async with ctx.http() as p:
        connection = await _connected(p)
        session = await p.new_session(_cwd(), connection)
        prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "hello"}]}
        missing = await p.post(rpc("session/prompt", prompt, id=p.next_id()))
        expect_status(missing.status, 400, "ACP-HTTP-005", "session/prompt without Acp-Session-Id")
        wrong = await p.post(rpc("session/prompt", prompt, id=p.next_id()), p.headers("not-" + session))
        expect_status(wrong.status, 400, "ACP-HTTP-005", "session/prompt with a mismatched Acp-Session-Id")
        return None


@_check("http-unknown-connection", "404 for an unknown Acp-Connection-Id", "ACP-HTTP-006", M, "http")
async def http_unknown_connection(ctx: RemoteContext) -> str | None:
    async with ctx.http() as p:
        await _connected(p)
        headers = p.headers(acp_connection_id="no-such-connection")
        reply = await p.post_new_session(headers)
        expect_status(reply.status, 404, "ACP-HTTP-006", "a POST on an unknown connection")
        status = await p.get_status({"accept": "text/event-stream", "acp-connection-id": "no-such-connection"})
        expect_status(status, 404, "ACP-HTTP-006", "a GET on an unknown connection")
        return None


@_check("http-not-acceptable", "406 for a GET without Accept: text/event-stream", "ACP-HTTP-007", M, "http")
async def http_not_acceptable(ctx: RemoteContext) -> str | None:
    async with ctx.http() as p:
        await _connected(p)
        assert p.connection is not None
        status = await p.get_status({"accept": "application/json", "acp-connection-id": p.connection})
        expect_status(status, 406, "ACP-HTTP-007", "a GET with Accept: application/json")
        return None


@_check("http-unsupported-media", "415 for a POST that is not application/json", "ACP-HTTP-008", M, "http")
async def http_unsupported_media(ctx: RemoteContext) -> str | None:
    async with ctx.http() as p:
        await _connected(p)
        reply = await p.post_new_session(p.headers(content_type="text/plain"))
        expect_status(reply.status, 415, "ACP-HTTP-008", "a POST with Content-Type: text/plain")
        return None


def _cookie_problem(header: str, url: str) -> str | None:
    """Why a client's cookie jar would never send this Set-Cookie back to ``url`` (None: it would)."""
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(header)
    except Exception:  # malformed: a jar drops it
        return f"unparsable Set-Cookie {header!r}"
    parts = urlsplit(url)
    for name, morsel in jar.items():
        path = morsel["path"] or "/"
        if not (parts.path or "/").startswith(path):
            return f"cookie {name} is for path {path!r}, not the endpoint's {parts.path!r}: no client returns it"
        domain = morsel["domain"].lstrip(".")
        if domain and not (parts.hostname or "").endswith(domain):
            return f"cookie {name} is for domain {domain!r}, not {parts.hostname!r}"
        if morsel["max-age"] in ("0", "-1"):
            return f"cookie {name} expires at once (Max-Age={morsel['max-age']})"
    return None


@_check("http-cookies", "the cookies the server sets work when returned", "ACP-HTTP-009", M, "http")
async def http_cookies(ctx: RemoteContext) -> str | None:
    async with ctx.http() as p:
        connection = await _connected(p)
        if not p.set_cookies:
            raise NotApplicable("the server sets no cookie (a server that requires one must set it)")
        for header in p.set_cookies:
            problem = _cookie_problem(header, p.url)
            if problem is not None:
                raise Fail("ACP-HTTP-009", problem)
        await p.new_session(_cwd(), connection)  # the runner's jar returns every cookie set
        return f"{len(p.set_cookies)} Set-Cookie header(s), returned on every later request"


@_check("http-delete", "DELETE ends the connection", "ACP-HTTP-010", M, "http")
async def http_delete(ctx: RemoteContext) -> str | None:
    async with ctx.http() as p:
        stream = await _connected(p)
        reply = await p.delete()
        if not 200 <= reply.status < 300:
            raise Fail("ACP-HTTP-010", f"DELETE was answered HTTP {reply.status}")
        with anyio.move_on_after(ctx.timeout):
            await stream.ended.wait()
        if not stream.ended.is_set():
            raise Fail("ACP-HTTP-010", "the connection's event stream stayed open after DELETE")
        after = await p.post_new_session()
        expect_status(after.status, 404, "ACP-HTTP-010", "a POST after DELETE")
        return None


@_check("http-stream-dropped", "a dropped connection stream ends the connection", "ACP-HTTP-011", A, "http")
async def http_stream_dropped(ctx: RemoteContext) -> str | None:
    async with ctx.http() as p:
        stream = await _connected(p)
        stream.close()

        async def connection_gone() -> bool:
            reply: Reply = await p.post_new_session()
            return reply.status == 404

        if await _until(connection_gone, ctx.timeout, every=0.25):
            return None
        ctx.warn("ACP-HTTP-011", "the connection lived on after its event stream was dropped (answers go nowhere)")
        return None


@_check("http-batch", "a JSON-RPC batch is refused (400 or 501)", "ACP-HTTP-012", A, "http")
async def http_batch(ctx: RemoteContext) -> str | None:
    async with ctx.http() as p:
        await _connected(p)
        batch = [rpc("session/new", {"cwd": _cwd(), "mcpServers": []}, id=p.next_id())]
        reply = await p.post(batch)
        if reply.status in (400, 501):
            return f"HTTP {reply.status}"
        ctx.warn("ACP-HTTP-012", f"a batch was answered HTTP {reply.status} (ACP has no batches: 400 or 501)")
        return None


@_check("http2", "HTTP/2 (h2c with prior knowledge, or TLS ALPN)", "ACP-HTTP-013", A, "http")
async def http2(ctx: RemoteContext) -> str | None:
    """The RFD's Streamable HTTP profile requires HTTP/2 (its streams share one TCP connection); the TypeScript
    SDK server speaks HTTP/1.1 only, and a proxy may terminate HTTP/2 in front of a server, so a warning. Asked
    for explicitly: the other rows (and the agent checks) speak HTTP/1.1, the dialer's ``"auto"``."""
    base = ctx.dialer
    plain = base.request_url.startswith("http:")
    dialer = RemoteDialer(
        base.url,
        headers=base.headers,
        insecure=base.insecure,
        ca_file=base.ca_file,
        ssl_context=base.ssl_context,
        http_version="2",
    )
    how = "h2c with prior knowledge" if plain else "TLS ALPN"
    async with http_probe(dialer, ctx.timeout) as p:
        try:
            reply = await p.initialize()
        except Exception as exc:  # an HTTP/1.1-only server drops the h2 preface
            ctx.warn("ACP-HTTP-013", f"HTTP/1.1 only: initialize over HTTP/2 ({how}) failed ({type(exc).__name__})")
            return None
    if reply.status != 200 or reply.http_version != "HTTP/2":
        ctx.warn("ACP-HTTP-013", f"initialize over HTTP/2 ({how}) got {reply.http_version} {reply.status}")
        return None
    return f"served over HTTP/2 ({how})"


# -- WebSocket ---------------------------------------------------------------------------------------------


async def _ws_messages(ws: Any, want: Callable[[dict[str, Any]], bool], timeout: float, seen: list[Any]) -> Any:
    """Frames until one ``want`` accepts; every frame (wsproto events) is appended to ``seen``."""
    import json

    import wsproto.events as events

    with anyio.fail_after(timeout):
        while True:
            event = await ws.receive()
            seen.append(event)
            if isinstance(event, events.CloseConnection):
                raise Fail("ACP-WS-003", f"the server closed the socket ({event.code} {event.reason!r})")
            data = getattr(event, "data", None)
            if isinstance(data, (str, bytes)):
                try:
                    message = json.loads(data)
                except ValueError:
                    continue
                if isinstance(message, dict) and want(message):
                    return message


async def _ws_call(ws: Any, method: str, params: dict[str, Any], rid: int, timeout: float, seen: list[Any]) -> Any:
    import json

    await ws.send_text(json.dumps(rpc(method, params, id=rid)))
    return await _ws_messages(ws, lambda m: m.get("id") == rid and "method" not in m, timeout, seen)


@_check("ws-upgrade", "the upgrade: 101 with Acp-Connection-Id, then initialize", "ACP-WS-001", M, "websocket")
async def ws_upgrade(ctx: RemoteContext) -> str | None:
    async with ws_probe(ctx.dialer, ctx.timeout) as (ws, response):
        if response.status_code != 101 or not response.headers.get("acp-connection-id"):
            raise Fail("ACP-WS-001", f"the upgrade answered {response.status_code} without Acp-Connection-Id")
        answer = await _ws_call(ws, "initialize", initialize_params(), 0, ctx.timeout, [])
        if not isinstance(answer.get("result"), dict):
            raise Fail("ACP-WS-001", f"initialize over the socket was not answered with a result: {answer}")
        return None


@_check("ws-text-frames", "every message is one text frame", "ACP-WS-002", M, "websocket")
async def ws_text_frames(ctx: RemoteContext) -> str | None:
    import wsproto.events as events

    seen: list[Any] = []
    async with ws_probe(ctx.dialer, ctx.timeout) as (ws, _):
        await _ws_call(ws, "initialize", initialize_params(), 0, ctx.timeout, seen)
        new = await _ws_call(ws, "session/new", {"cwd": _cwd(), "mcpServers": []}, 1, ctx.timeout, seen)
        session = (new.get("result") or {}).get("sessionId")
        prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "hello"}]}
        await _ws_call(ws, "session/prompt", prompt, 2, ctx.timeout, seen)
    binary = [e for e in seen if isinstance(e, events.BytesMessage)]
    if binary:
        raise Fail("ACP-WS-002", f"{len(binary)} of {len(seen)} frames were binary (ACP messages are text frames)")
    return f"{len(seen)} text frames"


@_check("ws-session-close", "closing one session leaves the socket open", "ACP-WS-003", M, "websocket")
async def ws_session_close(ctx: RemoteContext) -> str | None:
    seen: list[Any] = []
    async with ws_probe(ctx.dialer, ctx.timeout) as (ws, _):
        init = await _ws_call(ws, "initialize", initialize_params(), 0, ctx.timeout, seen)
        sessions = []
        for rid in (1, 2):
            new = await _ws_call(ws, "session/new", {"cwd": _cwd(), "mcpServers": []}, rid, ctx.timeout, seen)
            sessions.append((new.get("result") or {}).get("sessionId"))
        closed = await _ws_call(ws, "session/close", {"sessionId": sessions[0]}, 3, ctx.timeout, seen)
        if "error" in closed:
            capabilities = ((init.get("result") or {}).get("agentCapabilities") or {}).get("sessionCapabilities")
            raise NotApplicable(f"session/close was refused ({closed['error']}; capabilities {capabilities})")
        prompt = {"sessionId": sessions[1], "prompt": [{"type": "text", "text": "hello"}]}
        answer = await _ws_call(ws, "session/prompt", prompt, 4, ctx.timeout, seen)
        if "result" not in answer:
            raise Fail("ACP-WS-003", f"the other session's prompt failed after one session closed: {answer}")
        return None
