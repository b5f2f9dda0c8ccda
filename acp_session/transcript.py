"""Wire transcripts: record every JSON-RPC line in both directions, and fold a recording back into state.

Opt in with ``ClientBuilder.record_transcript(path)`` (or wrap any transport in ``RecordingTransport``).
Each line of the file is ``{"t": <unix seconds>, "dir": "in" | "out", "msg": <the message>}``; a line
that is not JSON is kept as ``"raw": "<text>"`` instead of ``msg``. ``load_transcript`` replays a file
into a ``SessionState`` exactly as a live client would have folded it: a bug report in one file, or a
test fixture.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec

from .codec import convert
from .conversation.state import SessionState
from .schema import (
    NewSessionResponse,
    ResumeSessionResponse,
    SetSessionConfigOptionResponse,
)
from .schema import unstable as mu
from .transport.recording import Direction, RecordingTransport

__all__ = ["RecordingTransport", "TranscriptEntry", "WireLoss", "load_transcript", "read_transcript", "wire_losses"]


@dataclass(frozen=True)
class TranscriptEntry:
    t: float
    direction: Direction
    message: Any  # the decoded JSON message, or None for a line that was not JSON
    raw: str | None = None


def read_transcript(path: str | os.PathLike[str]) -> list[TranscriptEntry]:
    entries = []
    for line in Path(path).read_bytes().splitlines():
        if line.strip():
            row = msgspec.json.decode(line)
            entries.append(TranscriptEntry(row["t"], row["dir"], row.get("msg"), row.get("raw")))
    return entries


def load_transcript(path: str | os.PathLike[str], session_id: str | None = None) -> SessionState:
    """Fold a recorded client transcript into the state of one session (the first one seen by default).

    Incoming ``session/update`` notifications are folded in order; the answers to ``session/new``,
    ``session/resume`` (with its replay window) and ``session/set_config_option`` are applied where they
    arrived, matched to the recorded requests by id.
    """
    state = SessionState(session_id)
    requests: dict[Any, dict[str, Any]] = {}
    for entry in read_transcript(path):
        message = entry.message
        if not isinstance(message, dict):
            continue
        method = message.get("method")
        params = message.get("params") or {}
        if entry.direction == "out":
            if method is not None and "id" in message:
                requests[_key(message["id"])] = message
                if method == "session/resume" and _ours(state, params.get("sessionId")):
                    state.session_id = params["sessionId"]
                    state.begin_resume(replay=params.get("replayFrom") is not None)
            continue
        if method == "session/update":
            note = convert(params, mu.UpdateSessionNotification)
            if _ours(state, note.session_id):
                state.session_id = note.session_id
                state.apply(note.update)
            elif state.descendant(note.session_id) is not None:  # a subagent's own update (Preview)
                state.apply_descendant(note.session_id, note.update)
            continue
        request = requests.pop(_key(message.get("id")), None)
        if request is None or "result" not in message:
            if request is not None and request.get("method") == "session/resume" and state.resuming:
                state.apply_resume_response(ResumeSessionResponse())  # failed resume: close the window
            continue
        _apply_answer(state, request, message["result"])
    return state


def _apply_answer(state: SessionState, request: dict[str, Any], result: Any) -> None:
    method = request["method"]
    request_session = (request.get("params") or {}).get("sessionId")
    if method == "session/new":
        response = convert(result, NewSessionResponse)
        if state.session_id is None or state.session_id == response.session_id:
            state.apply_new_session_response(response)
    elif method == "session/resume" and request_session == state.session_id and state.resuming:
        state.apply_resume_response(convert(result, ResumeSessionResponse))
    elif method == "session/set_config_option" and request_session == state.session_id:
        state.apply_set_config_option_response(convert(result, SetSessionConfigOptionResponse))


def _ours(state: SessionState, session_id: Any) -> bool:
    return isinstance(session_id, str) and state.session_id in (None, session_id)


def _key(request_id: Any) -> str:
    return msgspec.json.encode(request_id).decode()


@dataclass(frozen=True)
class WireLoss:
    """A value of a recorded message that its typed decode does not give back: ``path`` (JSON pointer-like,
    e.g. ``update/usage/totalTokens``) in message ``index`` of the transcript (``what``: the method, or the
    answered request's method); ``raw`` is what the agent sent, ``decoded`` what the types gave back (None when
    the field was dropped)."""

    index: int
    what: str
    path: str
    raw: Any
    decoded: Any


def wire_losses(path: str | os.PathLike[str]) -> list[WireLoss]:
    """Check that nothing a (protocol version 2) agent sent is lost by the types this library decodes it with:
    every incoming ``session/update``, agent request, notification of the schema and answer to a schema method is
    decoded with the unstable schema's types (what the connection uses) and compared field by field with the raw
    JSON. Returns every dropped or changed value (empty: nothing lost). Extension methods (``_``) are not typed
    and not checked."""
    from .codec import decode
    from .schema import AGENT_METHODS, CLIENT_METHODS

    requests: dict[str, str] = {}
    losses: list[WireLoss] = []
    for index, entry in enumerate(read_transcript(path)):
        message = entry.message
        if not isinstance(message, dict):
            continue
        method = message.get("method")
        if entry.direction == "out":
            if isinstance(method, str) and "id" in message:
                requests[_key(message["id"])] = method
            continue
        if isinstance(method, str):
            spec: Any = mu.CLIENT_NOTIFICATIONS.get(method) if "id" not in message else None
            tp = spec.params if spec is not None else None
            if tp is None and "id" in message:
                request_spec = mu.CLIENT_METHODS.get(method) or CLIENT_METHODS.get(method)
                tp = None if request_spec is None else request_spec.params
            raw = message.get("params")
            what = method
        else:
            what = requests.pop(_key(message.get("id")), "")
            result_spec = mu.AGENT_METHODS.get(what) or AGENT_METHODS.get(what)
            tp = None if result_spec is None or "result" not in message else result_spec.result
            raw = message.get("result")
        if tp is None:
            continue
        back = msgspec.to_builtins(decode(msgspec.json.encode(raw), tp))
        losses.extend(WireLoss(index, what, where, sent, got) for where, sent, got in _differences(raw, back, ""))
    return losses


def _differences(raw: Any, back: Any, where: str) -> list[tuple[str, Any, Any]]:
    """Where ``back`` lost or changed a value of ``raw`` (keys ``back`` added, e.g. defaults, are not losses)."""
    if isinstance(raw, dict):
        if not isinstance(back, dict):
            return [(where, raw, back)]
        out: list[tuple[str, Any, Any]] = []
        for key, value in raw.items():
            inner = f"{where}/{key}" if where else str(key)
            if key not in back:
                out.append((inner, value, None))
            else:
                out.extend(_differences(value, back[key], inner))
        return out
    if isinstance(raw, list):
        if not isinstance(back, list) or len(back) != len(raw):
            return [(where, raw, back)]
        pairs = enumerate(zip(raw, back, strict=True))
        return [d for i, (a, b) in pairs for d in _differences(a, b, f"{where}/{i}")]
    if raw != back or (
        type(raw) is not type(back) and not (isinstance(raw, (int, float)) and isinstance(back, (int, float)))
    ):
        return [(where, raw, back)]
    return []
