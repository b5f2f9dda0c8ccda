"""Wire transcripts: record every JSON-RPC line in both directions, and fold a recording back into state.

Opt in with ``ClientBuilder.record_transcript(path)`` (or wrap any transport in ``RecordingTransport``).
Each line of the file is ``{"t": <unix seconds>, "dir": "in" | "out", "msg": <the message>}``; a line
that is not JSON is kept as ``"raw": "<text>"`` instead of ``msg``. ``load_transcript`` replays a file
into a ``SessionState`` exactly as a live client would have folded it: a bug report in one file, or a
test fixture.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

import msgspec

from .codec import convert
from .conversation.state import SessionState
from .schema import (
    NewSessionResponse,
    ResumeSessionResponse,
    SetSessionConfigOptionResponse,
)
from .schema import unstable as mu
from .transport import DEFAULT_RECEIVE_SIZE, PeerExit, Transport

__all__ = ["RecordingTransport", "TranscriptEntry", "load_transcript", "read_transcript"]

Direction = Literal["in", "out"]


class RecordingTransport:
    """A ``Transport`` that passes bytes through unchanged and appends each complete line to a file."""

    def __init__(self, inner: Transport, path: str | os.PathLike[str]) -> None:
        self.inner = inner
        self.path = Path(path)
        self._file: IO[bytes] | None = self.path.open("ab")
        self._partial = {"in": b"", "out": b""}

    def _record(self, direction: Direction, data: bytes) -> None:
        file = self._file
        if file is None:
            return
        lines = (self._partial[direction] + data).split(b"\n")
        self._partial[direction] = lines.pop()
        prefix = b'{"t":%.6f,"dir":"%s",' % (time.time(), direction.encode())
        for line in lines:
            line = line.rstrip(b"\r")
            if not line.strip():
                continue
            try:
                msgspec.json.decode(line)
            except msgspec.DecodeError:
                file.write(prefix + b'"raw":' + msgspec.json.encode(line.decode("utf-8", "replace")) + b"}\n")
            else:
                file.write(prefix + b'"msg":' + line + b"}\n")
        file.flush()

    async def receive(self, max_bytes: int = DEFAULT_RECEIVE_SIZE) -> bytes:
        data = await self.inner.receive(max_bytes)
        self._record("in", data)
        return data

    async def send(self, item: bytes) -> None:
        self._record("out", bytes(item))
        await self.inner.send(item)

    async def aclose(self) -> None:
        try:
            await self.inner.aclose()
        finally:
            if self._file is not None:
                self._file.close()
                self._file = None

    async def peer_exit(self) -> PeerExit:
        return await self.inner.peer_exit()


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
