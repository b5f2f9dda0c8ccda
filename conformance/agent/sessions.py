"""Per-session state of the reference agent: history for replay, foreground state, held prompts."""

from __future__ import annotations

import collections
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from msgspec import UNSET

from acp_session.rpc import PendingRequest
from acp_session.schema.types import (
    AvailableCommandsUpdate,
    BackgroundWork,
    ConfigOptionUpdate,
    Notice,
    SessionUpdate,
    StateUpdate,
    UsageUpdate,
)

from .config import ConfigValues

__all__ = ["HeldPrompt", "Session", "SessionStore"]

Emit = Callable[[str, SessionUpdate], Awaitable[None]]

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
    title: str | None = None
    updated_at: str | None = None
    config: ConfigValues = field(default_factory=ConfigValues)
    history: list[SessionUpdate] = field(default_factory=list)
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

    def next_id(self, prefix: str) -> str:
        self.counters[prefix] += 1
        return f"{prefix}-{self.counters[prefix]}"

    async def emit(self, update: SessionUpdate) -> None:
        """Send one update for this session (nothing once it is closed) and keep history for replay."""
        if not self.open:
            return
        if not isinstance(update, _NOT_HISTORY):
            self.history.append(update)
        await self.emit_raw(self.session_id, update)

    def state_update(self, state: str, stop_reason: str | None = None) -> StateUpdate:
        # An agent that reports background work includes it on every state update (ACP2-042).
        background = UNSET if self.background is None else list(self.background)
        return StateUpdate(
            state=state, stop_reason=UNSET if stop_reason is None else stop_reason, background=background
        )

    async def set_state(self, state: str, stop_reason: str | None = None, *, send: bool = True) -> None:
        self.state = state
        if stop_reason is not None:
            self.last_stop_reason = stop_reason
        if send:
            await self.emit(self.state_update(state, stop_reason))


class SessionStore:
    """All sessions this agent process knows (in memory; gone when the process exits)."""

    def __init__(self) -> None:
        self._sessions: dict[str, Session] = {}
        self._count = 0

    def new_id(self) -> str:
        self._count += 1
        return f"sess-{self._count}"

    def add(self, session: Session) -> None:
        self._sessions[session.session_id] = session

    def get(self, session_id: str) -> Session | None:
        return self._sessions.get(session_id)

    def remove(self, session_id: str) -> Session | None:
        return self._sessions.pop(session_id, None)

    def all(self) -> list[Session]:
        return list(self._sessions.values())
