"""Per-session state of the reference agent: history for replay, foreground state, held prompts."""

from __future__ import annotations

import collections
import functools
import json
import logging
import os
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from msgspec import UNSET

from acp_session.codec import decoder, to_builtins
from acp_session.registry.lock import locked, replace_file
from acp_session.rpc import PendingRequest
from acp_session.schema import unstable as mu
from acp_session.schema.types import (
    AvailableCommandsUpdate,
    BackgroundWork,
    ConfigOptionUpdate,
    Notice,
    StateUpdate,
    UsageUpdate,
)

from .config import ConfigValues

__all__ = ["LOCK_WAIT", "HeldPrompt", "Session", "SessionStore"]

_log = logging.getLogger("acp_conformance.agent")

LOCK_WAIT = 10.0
"""Seconds a change of the store file waits for another agent process's change (each takes milliseconds)."""
_LOCK_POLL = 0.002  # a change holds the lock for about a millisecond: try again soon

Emit = Callable[[str, mu.SessionUpdate], Awaitable[None]]

# Live-only updates: not conversation history, so never replayed (notices: session-setup.mdx "replay").
_NOT_HISTORY = (StateUpdate, Notice, UsageUpdate, ConfigOptionUpdate, AvailableCommandsUpdate)


@dataclass(eq=False)
class HeldPrompt:
    """A prompt received while the session was busy: not inserted until its turn comes."""

    go: anyio.Event = field(default_factory=anyio.Event)
    withdrawn: bool = False


@dataclass(eq=False)
class Session:
    session_id: str
    cwd: str
    emit_raw: Emit
    additional_directories: list[str] = field(default_factory=list)
    mcp_servers: list[dict[str, Any]] = field(default_factory=list)  # as received; not stored across processes
    title: str | None = None
    updated_at: str | None = None
    config: ConfigValues = field(default_factory=ConfigValues)
    history: list[mu.SessionUpdate] = field(default_factory=list)
    open: bool = True
    state: str = "idle"
    last_stop_reason: str | None = None
    busy: bool = False  # a prompt is inserted and its work has not ended, or one is being handed over
    held: collections.deque[HeldPrompt] = field(default_factory=collections.deque)
    work_scope: anyio.CancelScope | None = None
    work_done: anyio.Event | None = None
    cancelling: bool = False
    permissions: set[PendingRequest[Any]] = field(default_factory=set)
    background: list[BackgroundWork] | None = None  # None until background work was first reported
    background_scopes: list[anyio.CancelScope] = field(default_factory=list)
    counters: collections.Counter[str] = field(default_factory=collections.Counter)
    system_prompt: mu.SystemPrompt | None = None  # Preview: given on new, resume or fork
    archived: bool = False  # Preview: session/archive
    subagents: dict[str, Session] = field(default_factory=dict)  # child sessions this session created

    def next_id(self, prefix: str) -> str:
        self.counters[prefix] += 1
        return f"{prefix}-{self.counters[prefix]}"

    async def emit(self, update: mu.SessionUpdate) -> None:
        """Send one update for this session (nothing once it is closed) and keep history for replay."""
        if not self.open:
            return
        if not isinstance(update, _NOT_HISTORY):
            self.history.append(update)
        await self.emit_raw(self.session_id, update)

    def state_update(self, state: str, stop_reason: str | None = None) -> mu.StateUpdate:
        # An agent that reports background work includes it on every state update (ACP2-042).
        background: Any = UNSET if self.background is None else list(self.background)
        return mu.StateUpdate(
            state=state, stop_reason=UNSET if stop_reason is None else stop_reason, background=background
        )

    async def set_state(self, state: str, stop_reason: str | None = None, *, send: bool = True) -> None:
        self.state = state
        if stop_reason is not None:
            self.last_stop_reason = stop_reason
        if send:
            await self.emit(self.state_update(state, stop_reason))


class SessionStore:
    """All sessions this agent process knows: in memory, and with ``path`` also kept in a JSON file.

    The file holds each session's id, cwd, title, time, config and replayable history, so another agent
    process started with the same file lists and resumes them (the ``acp-session`` CLI relies on this). Any
    number of agent processes may share one file: every change holds the file's lock (``FILE.lock`` beside it,
    ``flock``, released when its holder dies) across its read and its write, a save replaces only the sessions
    this process changed, and the new contents go to a temporary file of a unique name renamed over the old one
    (``acp_session.registry.lock.replace_file``). A new session id is taken from the file's counter under the
    lock and the counter written back at once, so two processes never hand out the same id.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, emit_raw: Emit | None = None) -> None:
        self._sessions: dict[str, Session] = {}
        self._count = 0
        self.path = Path(path) if path is not None else None
        self._emit_raw = emit_raw
        self._deleted: set[str] = set()
        if self.path is not None:
            data = self._read()
            self._count = _count_of(data)
            for raw in data.get("sessions", []):
                try:
                    session = self._load(raw)
                except Exception:
                    _log.warning("skipping an unreadable stored session", exc_info=True)
                    continue
                self._sessions[session.session_id] = session

    def new_id(self) -> str:
        """A session id no process sharing the file has given out (``OSError`` when the file cannot be used)."""
        if self.path is None:
            self._count += 1
            return f"sess-{self._count}"
        with self._locked():
            data = self._read()
            self._count = max(self._count, _count_of(data)) + 1
            data["count"] = self._count  # taken now: another process reads the new count
            self._write(data)
        return f"sess-{self._count}"

    def add(self, session: Session) -> None:
        self._sessions[session.session_id] = session
        self._deleted.discard(session.session_id)
        self.save(session)

    def get(self, session_id: str) -> Session | None:
        return self._sessions.get(session_id)

    def remove(self, session_id: str) -> Session | None:
        session = self._sessions.pop(session_id, None)
        self._deleted.add(session_id)
        self.save()
        return session

    def all(self) -> list[Session]:
        return list(self._sessions.values())

    # -- the file ---------------------------------------------------------------------------------------

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold the file's lock (``OSError`` when another process keeps it for ``LOCK_WAIT`` seconds)."""
        assert self.path is not None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with locked(self.path.with_name(self.path.name + ".lock"), wait=LOCK_WAIT, poll=_LOCK_POLL) as held:
            if not held:
                raise OSError(f"session store {self.path} stayed locked by another process for {LOCK_WAIT:g} s")
            yield

    def _read(self) -> dict[str, Any]:
        assert self.path is not None
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError):
            _log.warning("session store %s is unreadable; starting empty", self.path)
            return {}
        return data if isinstance(data, dict) else {}

    def _write(self, data: dict[str, Any]) -> None:
        """Replace the file (the caller holds the lock); not synced to disk: the store is a convenience, and a
        reader sees the old contents or the new ones either way."""
        assert self.path is not None
        replace_file(self.path, json.dumps(data).encode("utf-8"), sync=False)

    def _load(self, raw: dict[str, Any]) -> Session:
        assert self._emit_raw is not None
        session = Session(
            session_id=str(raw["sessionId"]),
            cwd=str(raw["cwd"]),
            emit_raw=self._emit_raw,
            additional_directories=list(raw.get("additionalDirectories", [])),
            title=raw.get("title"),
            updated_at=raw.get("updatedAt"),
            history=_history(json.dumps(raw.get("history", [])).encode()),
            open=False,
            last_stop_reason=raw.get("lastStopReason"),
        )
        config = raw.get("config", {})
        session.config.mode = str(config.get("mode", session.config.mode))
        session.config.thoughts = bool(config.get("thoughts", session.config.thoughts))
        session.counters.update({str(k): int(v) for k, v in raw.get("counters", {}).items()})
        for child in raw.get("subagents", []):
            child_id = str(child["sessionId"])
            history = _history(json.dumps(child.get("history", [])).encode())
            session.subagents[child_id] = Session(child_id, session.cwd, self._emit_raw, history=history, open=False)
        return session

    @staticmethod
    def _dump(session: Session) -> dict[str, Any]:
        return {
            "sessionId": session.session_id,
            "cwd": session.cwd,
            "additionalDirectories": list(session.additional_directories),
            "title": session.title,
            "updatedAt": session.updated_at,
            "config": {"mode": session.config.mode, "thoughts": session.config.thoughts},
            "history": to_builtins(session.history),
            "lastStopReason": session.last_stop_reason,
            "counters": dict(session.counters),
            "subagents": [
                {"sessionId": child.session_id, "history": to_builtins(child.history)}
                for child in session.subagents.values()
            ],
        }

    def save(self, *changed: Session) -> None:
        """Write the ``changed`` sessions and this process's deletions over what the file holds (no-op without
        ``path``), under its lock, so that what other processes saved meanwhile is kept."""
        if self.path is None:
            return
        with self._locked():
            data = self._read()
            stored = {str(raw.get("sessionId")): raw for raw in data.get("sessions", []) if isinstance(raw, dict)}
            for session_id in self._deleted:
                stored.pop(session_id, None)
            for session in changed:
                if session.session_id in self._sessions:
                    stored[session.session_id] = self._dump(session)
            self._count = max(self._count, _count_of(data))
            self._write({"count": self._count, "sessions": list(stored.values())})


def _count_of(data: dict[str, Any]) -> int:
    """The file's session counter (0 when it has none, or not a number)."""
    count = data.get("count", 0)
    return count if isinstance(count, int) and not isinstance(count, bool) and count >= 0 else 0


@functools.cache
def _history_decoder() -> Callable[[bytes], list[Any]]:
    """The stored history's decoder, built when a store is first read (not at every agent's start: it is the
    largest union of the schema)."""
    return decoder(list[mu.SessionUpdate])


def _history(data: bytes) -> list[Any]:
    return _history_decoder()(data)
