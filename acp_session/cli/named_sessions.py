"""Sessions by a name of the user's (``chat --session NAME``, ``resume NAME``, ``sessions show NAME``): a small
file under the state directory mapping (agent, name) to a session id and its directory (``state_files``: safe
between concurrent ``acp-session`` processes)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from .state_files import read_rows, state_dir, update_rows

__all__ = ["NamedSessions"]


class NamedSessions:
    """Read and written whole; a missing or unwritable file is treated as empty, never an error."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else state_dir() / "named-sessions.json"

    def _load(self) -> list[dict[str, Any]]:
        return [row for row in read_rows(self.path) if isinstance(row.get("session_id"), str)]

    def find(self, name: str, agent: str) -> dict[str, Any] | None:
        """The session this agent's ``name`` stands for."""
        return next((row for row in self._load() if row.get("name") == name and row.get("agent") == agent), None)

    def names_of(self, session_id: str, agent: str | None = None) -> list[str]:
        """The names given to ``session_id`` (of ``agent``: another agent's session may have the same id)."""
        return [
            str(row.get("name"))
            for row in self._load()
            if row["session_id"] == session_id and (agent is None or row.get("agent") == agent)
        ]

    def remember(self, name: str, session_id: str, agent: str, cwd: str) -> None:
        row = {"name": name, "session_id": session_id, "agent": agent, "cwd": cwd, "created_at": time.time()}

        def change(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return [old for old in rows if not (old.get("name") == name and old.get("agent") == agent)] + [row]

        update_rows(self.path, change)
