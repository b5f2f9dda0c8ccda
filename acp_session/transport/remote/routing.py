"""Sans-IO routing of the HTTP profile: which session a message belongs to, which requests wait on which
session's stream, and the error answers the transport gives in the server's stead.

The server delivers a session's messages (its updates, the agent's requests, the answers to session-scoped
requests) on that session's GET stream, and everything else on the connection's stream. So a POST carries
``Acp-Session-Id`` when its message names a session (``params.sessionId``), and the client's *answer* to an
agent request carries the session of the stream the request came on. When a session's stream is lost, the
requests waiting on it can never be answered: they are failed here, never left pending.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import msgspec

__all__ = ["Head", "IdKey", "Routes", "error_answer", "read_head"]

IdKey = tuple[str, Any]

REATTACH = frozenset({"session/load", "session/resume"})
"""Requests that attach a detached session again."""

OPENS_SESSION = frozenset({"session/new", "session/fork"})
"""Requests whose answer names a new session (``result.sessionId``): only their answers open a session stream,
so a server cannot make the client open streams for sessions it never asked for."""


class _Ref(msgspec.Struct):
    sessionId: Any = None  # the wire's name


class _Params(msgspec.Struct):
    sessionId: Any = None


class _Head(msgspec.Struct):
    id: Any = msgspec.UNSET
    method: Any = None
    params: _Params | None = None
    result: _Ref | None = None


_decode_head = msgspec.json.Decoder(_Head).decode
_decode_any = msgspec.json.Decoder().decode


@dataclass(frozen=True, slots=True)
class Head:
    """What routing needs of one message."""

    id: Any  # the JSON-RPC id as sent (UNSET for a notification)
    method: str | None
    session: str | None  # params.sessionId
    result_session: str | None  # result.sessionId (an answer that names a session: session/new, fork...)

    @property
    def key(self) -> IdKey | None:
        return _key(self.id)

    @property
    def is_request(self) -> bool:
        return self.method is not None and self.id is not msgspec.UNSET

    @property
    def is_response(self) -> bool:
        return self.method is None and self.id is not msgspec.UNSET


def _key(raw: Any) -> IdKey | None:
    if raw is msgspec.UNSET or isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return ("n", raw)
    if isinstance(raw, str):
        return ("s", raw)
    return ("null", None) if raw is None else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def read_head(frame: bytes) -> Head | None:
    """The routing facts of ``frame``; None when it is not a JSON object."""
    try:
        head = _decode_head(frame)
    except msgspec.ValidationError:
        return _read_loose(frame)
    except msgspec.DecodeError:
        return None
    params = head.params
    return Head(
        head.id,
        _text(head.method),
        None if params is None else _text(params.sessionId),
        None if head.result is None else _text(head.result.sessionId),
    )


def _read_loose(frame: bytes) -> Head | None:
    """The slow path: a message whose params or result is not an object (or whose fields have odd types)."""
    try:
        value = _decode_any(frame)
    except msgspec.DecodeError:
        return None
    if not isinstance(value, dict):
        return None
    params, result = value.get("params"), value.get("result")
    return Head(
        value.get("id", msgspec.UNSET),
        _text(value.get("method")),
        _text(params.get("sessionId")) if isinstance(params, dict) else None,
        _text(result.get("sessionId")) if isinstance(result, dict) else None,
    )


def error_answer(raw_id: Any, message: str, data: Any = None) -> bytes:
    """A JSON-RPC error answer (-32603) the transport gives for a request the server cannot answer."""
    error: dict[str, Any] = {"code": -32603, "message": message}
    if data is not None:
        error["data"] = data
    return msgspec.json.encode({"jsonrpc": "2.0", "id": raw_id, "error": error})


class Routes:
    """The HTTP profile's routing state of one connection."""

    __slots__ = ("_answer_routes", "_opening", "_pending", "detached")

    def __init__(self) -> None:
        self._opening: set[IdKey] = set()  # our session/new and session/fork requests not yet answered
        self._pending: dict[IdKey, tuple[str, Any]] = {}  # our session-scoped requests not yet answered
        self._answer_routes: dict[IdKey, str] = {}  # the agent's requests, by the session stream they came on
        self.detached: dict[str, dict[str, Any]] = {}  # session -> the error data of its 409

    def outgoing_session(self, head: Head) -> str | None:
        """The session a message we send belongs to (and so the ``Acp-Session-Id`` of its POST)."""
        if head.session is not None:
            return head.session
        if head.is_response:
            key = head.key
            if key is not None:
                return self._answer_routes.pop(key, None)
        return None

    def sending(self, head: Head) -> None:
        """Any request goes out: remember the ones whose answer opens a session."""
        key = head.key
        if head.method in OPENS_SESSION and head.is_request and key is not None:
            self._opening.add(key)

    def new_session(self, head: Head) -> str | None:
        """The session an answer opens (the answer to our session/new or session/fork), else None."""
        key = head.key
        if not head.is_response or key is None or key not in self._opening:
            return None
        self._opening.discard(key)
        return head.result_session

    def sent(self, head: Head, session: str) -> None:
        """A session-scoped request went out: its answer comes on that session's stream."""
        key = head.key
        if head.is_request and key is not None:
            self._pending[key] = (session, head.id)

    def received(self, head: Head, stream_session: str | None) -> None:
        """A message arrived on a stream (``stream_session``: a session's, None: the connection's)."""
        key = head.key
        if key is None:
            return
        if head.is_response:
            self._pending.pop(key, None)
        elif head.is_request and stream_session is not None:
            self._answer_routes[key] = stream_session

    def unanswered(self, head: Head) -> bool:
        """Whether the request of ``head`` still waits (it is forgotten here)."""
        key = head.key
        return key is not None and self._pending.pop(key, None) is not None

    def fail_session(self, session: str) -> list[Any]:
        """The ids of the requests waiting on ``session``'s stream, forgotten: they are failed by the caller."""
        lost = [key for key, (owner, _) in self._pending.items() if owner == session]
        return [self._pending.pop(key)[1] for key in lost]
