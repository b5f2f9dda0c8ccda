"""The remote transport's rules, sans-IO: which HTTP status a request earns and where each agent message goes.

``app`` (the ASGI side) asks ``check_post`` / ``check_get`` what to answer and feeds every message the agent
writes through an ``OutboundRoutes``, which says which stream carries it: the ``initialize`` POST's own response,
the connection's SSE stream, or one session's SSE stream. The rules follow the spec repo's RFD "Streamable HTTP &
WebSocket Transport" and what the official TypeScript SDK 2.4.0 server does (batches are 400 with -32600, a
string ``params.sessionId`` needs a matching ``Acp-Session-Id``), with one exception: ``session/load`` is answered
on its session's stream, as ``session/resume`` is (that SDK answers it on the connection stream), because v1's
replay comes before the load's answer and only one stream keeps that order.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

__all__ = [
    "CONNECTION",
    "INITIAL",
    "MAX_BODY_BYTES",
    "SESSION_SCOPED_METHODS",
    "BadRequest",
    "Inbound",
    "OutboundRoutes",
    "Route",
    "batch_error_body",
    "check_get",
    "check_post",
    "check_post_headers",
    "id_key",
    "parse_post",
]

MAX_BODY_BYTES = 16 * 1024 * 1024
"""A POST body over this is refused with 413 (the TypeScript SDK server's limit)."""

SESSION_SCOPED_METHODS = frozenset(
    {
        "session/cancel",
        "session/close",
        "session/delete",
        "session/fork",
        "session/load",
        "session/prompt",
        "session/resume",
        "session/set_config_option",
        "session/set_mode",
        "session/set_model",
    }
)
"""Client methods whose POST must carry ``Acp-Session-Id`` even without a string ``params.sessionId``."""

CONNECTION = "connection"
INITIAL = "initial"
Route = str | tuple[str, str]
"""Where an outbound message goes: ``INITIAL`` (the initialize POST's body), ``CONNECTION`` or
``("session", session_id)``."""

_DECODE = msgspec.json.Decoder()


class _HeadParams(msgspec.Struct):
    sessionId: Any = None
    requestId: Any = None


class _Head(msgspec.Struct):
    """What routing reads of an outbound message; the rest (an update's content) is skipped, not built."""

    id: Any = None
    method: Any = msgspec.UNSET
    params: _HeadParams | None = None


_DECODE_HEAD = msgspec.json.Decoder(_Head)


@dataclass(frozen=True)
class BadRequest(Exception):
    """The HTTP answer to a request that breaks a rule: its status, a short text and, for a batch, a JSON body."""

    status: int
    reason: str
    json_body: bytes | None = None


@dataclass(frozen=True)
class Inbound:
    """A POSTed message that passed the rules: the message, its raw bytes and its route (for its answer)."""

    message: dict[str, Any]
    raw: bytes
    route: Route

    @property
    def is_initialize(self) -> bool:
        return self.message.get("method") == "initialize" and "id" in self.message


def id_key(value: Any) -> str | None:
    """A JSON-RPC id as a dict key that keeps 1 and "1" apart; None for ids that cannot be answered."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        return "s:" + value
    if isinstance(value, int):
        return f"n:{value}"
    return None


def _session_id_of(message: Mapping[str, Any]) -> str | None:
    params = message.get("params")
    if isinstance(params, dict):
        value = params.get("sessionId")
        if isinstance(value, str):
            return value
    return None


def batch_error_body() -> bytes:
    """The one answer a batch gets (ACP has no batches): -32600 with a null id."""
    error = {"code": -32600, "message": "Invalid request", "data": "JSON-RPC batches are not supported"}
    return msgspec.json.encode({"jsonrpc": "2.0", "id": None, "error": error})


def _media_type(value: str | None) -> str:
    return (value or "").split(";", 1)[0].strip().lower()


def check_post_headers(headers: Mapping[str, str], content_length: int | None, *, lax: bool = False) -> None:
    """What can be refused before the body is read: 415 for a wrong Content-Type (unless ``lax``), 413 for a
    declared size."""
    if not lax and _media_type(headers.get("content-type")) != "application/json":
        raise BadRequest(415, "Unsupported Media Type: POST needs Content-Type: application/json")
    if content_length is not None and content_length > MAX_BODY_BYTES:
        raise BadRequest(413, f"Payload Too Large: bodies are limited to {MAX_BODY_BYTES} bytes")


def parse_post(headers: Mapping[str, str], body: bytes) -> Inbound | dict[str, Any]:
    """A POST body as one JSON-RPC message (an ``initialize`` as its ``Inbound``), or the ``BadRequest`` it earns."""
    if len(body) > MAX_BODY_BYTES:
        raise BadRequest(413, f"Payload Too Large: bodies are limited to {MAX_BODY_BYTES} bytes")
    try:
        message = _DECODE.decode(body)
    except msgspec.DecodeError:
        raise BadRequest(400, "Invalid JSON") from None
    if isinstance(message, list):
        raise BadRequest(400, "JSON-RPC batches are not supported", batch_error_body())
    if not isinstance(message, dict):
        raise BadRequest(400, "Invalid JSON-RPC message: not an object")
    if message.get("method") == "initialize" and "id" in message:
        if headers.get("acp-connection-id"):
            raise BadRequest(400, "initialize is not allowed on an existing connection")
        return Inbound(message, body, INITIAL)
    return message


def check_post(
    headers: Mapping[str, str],
    message: dict[str, Any],
    body: bytes,
    client_response_routes: Mapping[str, Route],
    *,
    check_session: bool = True,
) -> Inbound:
    """The route of a POSTed message on a known connection, or the ``BadRequest`` it earns.

    ``client_response_routes`` is the connection's record of the agent's own requests: an answer to one that
    went out on a session stream must name that session.
    """
    header_session = headers.get("acp-session-id")
    if "method" not in message:  # an answer to one of the agent's requests
        routes = client_response_routes
        key = id_key(message.get("id"))
        sent_on = routes.get(key) if key is not None else None
        if isinstance(sent_on, tuple):
            if not header_session:
                raise BadRequest(400, "Missing Acp-Session-Id: the request was sent on a session stream")
            if header_session != sent_on[1]:
                raise BadRequest(400, "Mismatched Acp-Session-Id")
        return Inbound(message, body, sent_on or CONNECTION)
    params_session = _session_id_of(message)
    method = message.get("method")
    if check_session and (params_session is not None or method in SESSION_SCOPED_METHODS) and not header_session:
        raise BadRequest(400, "Missing Acp-Session-Id")
    if check_session and header_session and params_session is not None and header_session != params_session:
        raise BadRequest(400, "Mismatched Acp-Session-Id")
    session = params_session or header_session
    route: Route = CONNECTION if session is None else ("session", session)
    return Inbound(message, body, route)


def check_get(headers: Mapping[str, str], *, lax: bool = False) -> tuple[str, str | None]:
    """A GET for an SSE stream: ``(connection_id, session_id or None)``, or the ``BadRequest`` it earns."""
    if not lax and "text/event-stream" not in (headers.get("accept") or "").lower():
        raise BadRequest(406, "Not Acceptable: GET needs Accept: text/event-stream")
    connection_id = headers.get("acp-connection-id")
    if not connection_id:
        raise BadRequest(400, "Missing Acp-Connection-Id")
    return connection_id, headers.get("acp-session-id") or None


class OutboundRoutes:
    """One connection's routing state: which stream each message the agent writes belongs on.

    ``expect_answer`` is told of every client request forwarded to the agent, so its answer goes where the
    request said; ``route`` classifies each outbound message and remembers the route of the agent's own
    requests, so ``client_response_routes`` can check the client's answers.
    """

    def __init__(self, *, answers_on_connection: bool = False) -> None:
        self.answers_on_connection = answers_on_connection  # ServerHooks.answers_on_connection_stream
        self._answer_routes: dict[str, Route] = {}
        self.client_response_routes: dict[str, Route] = {}

    def expect_answer(self, inbound: Inbound) -> None:
        key = id_key(inbound.message.get("id"))
        if "method" in inbound.message and key is not None:
            self._answer_routes[key] = inbound.route
        elif key is not None:
            self.client_response_routes.pop(key, None)  # answered: the agent's request is settled

    def route(self, frame: bytes) -> Route:
        try:
            head = _DECODE_HEAD.decode(frame)
        except msgspec.DecodeError:  # not JSON, not an object, or params that are no object: read it whole
            return self._route_message(frame)
        key = id_key(head.id)
        if head.method is msgspec.UNSET:  # an answer to a client request
            return self._answer_route(key)
        params = head.params
        session = params.sessionId if params is not None and isinstance(params.sessionId, str) else None
        cancelled = id_key(params.requestId) if params is not None and head.method == "$/cancel_request" else None
        return self._request_route(key, session, head.method, cancelled)

    def _route_message(self, frame: bytes) -> Route:
        try:
            message = _DECODE.decode(frame)
        except msgspec.DecodeError:
            return CONNECTION
        if not isinstance(message, dict):
            return CONNECTION
        key = id_key(message.get("id"))
        if "method" not in message:
            return self._answer_route(key)
        params = message.get("params")
        is_cancel = message.get("method") == "$/cancel_request"
        cancelled = id_key(params.get("requestId")) if is_cancel and isinstance(params, dict) else None
        return self._request_route(key, _session_id_of(message), message.get("method"), cancelled)

    def _answer_route(self, key: str | None) -> Route:
        """An answer to a client request goes where the request came from."""
        answer_route = self._answer_routes.pop(key, CONNECTION) if key is not None else CONNECTION
        return CONNECTION if self.answers_on_connection and answer_route != INITIAL else answer_route

    def _request_route(self, key: str | None, session: str | None, method: Any, cancelled: str | None) -> Route:
        route: Route = CONNECTION if session is None else ("session", session)
        if method == "$/cancel_request":
            # Withdrawing a request goes where the request went, so it stays in order with that session's updates.
            route = self.client_response_routes.get(cancelled, route) if cancelled is not None else route
        if key is not None:
            self.client_response_routes[key] = route
        return route
