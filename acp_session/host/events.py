"""What a host tells its operator: one ``HostEvent`` per client attached or gone, session made or resumed, turn
started or ended, permission or elicitation asked or answered, agent (re)started. ``acp-session serve`` prints each
as a line (``line``) or a JSON object (``record``); a library host hands them to its ``on_event`` callback."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["EventKind", "HostEvent"]

EventKind = Literal[
    "listening",
    "agent_started",
    "agent_exited",
    "agent_failed",
    "client_connected",
    "client_disconnected",
    "session_created",
    "session_attached",
    "session_detached",
    "client_fell_behind",
    "session_read_only",
    "session_mcp_servers",
    "turn_started",
    "turn_ended",
    "permission_asked",
    "permission_answered",
    "elicitation_asked",
    "elicitation_answered",
]


@dataclass(frozen=True)
class HostEvent:
    kind: EventKind
    session_id: str | None = None
    client: str | None = None
    """The client connection's id (``Acp-Connection-Id``)."""
    detail: dict[str, Any] = field(default_factory=dict)
    at: float = field(default_factory=time.time)

    def record(self) -> dict[str, Any]:
        """The event as a JSON object (``--json``)."""
        out: dict[str, Any] = {"event": self.kind, "time": round(self.at, 3)}
        if self.session_id is not None:
            out["sessionId"] = self.session_id
        if self.client is not None:
            out["client"] = self.client
        out.update(self.detail)
        return out

    def line(self) -> str:
        """The event as one human line (no token, no prompt text: ids, counts and reasons only)."""
        parts = [self.kind.replace("_", " ")]
        if self.session_id is not None:
            parts.append(f"session {self.session_id}")
        if self.client is not None:
            parts.append(f"client {self.client}")
        parts += [f"{key}={_short(value)}" for key, value in self.detail.items()]
        return " ".join(parts)


def _short(value: Any) -> str:
    text = str(value)
    text = "".join(ch if ch.isprintable() else " " for ch in text)
    return text if len(text) <= 200 else text[:199] + "\u2026"
