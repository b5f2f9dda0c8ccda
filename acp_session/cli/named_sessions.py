"""Sessions by a name of the user's (``chat --session NAME``, ``resume NAME``, ``sessions show NAME``): a small
file under the state directory mapping (agent, name) to a session id and its directory."""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import Any

from .recent import state_dir

__all__ = ["NamedSessions"]


class NamedSessions:
    """Read and written whole; a broken or unwritable file is treated as empty, never an error."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else state_dir() / "named-sessions.json"

    def _load(self) -> list[dict[str, Any]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        rows = data if isinstance(data, list) else []
        return [row for row in rows if isinstance(row, dict) and isinstance(row.get("session_id"), str)]

    def find(self, name: str, agent: str) -> dict[str, Any] | None:
        """The session this agent's ``name`` stands for."""
        return next((row for row in self._load() if row.get("name") == name and row.get("agent") == agent), None)

    def names_of(self, session_id: str) -> list[str]:
        return [str(row.get("name")) for row in self._load() if row["session_id"] == session_id]

    def remember(self, name: str, session_id: str, agent: str, cwd: str) -> None:
        rows = [row for row in self._load() if not (row.get("name") == name and row.get("agent") == agent)]
        rows.append({"name": name, "session_id": session_id, "agent": agent, "cwd": cwd, "created_at": time.time()})
        with contextlib.suppress(OSError):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
            tmp.replace(self.path)
