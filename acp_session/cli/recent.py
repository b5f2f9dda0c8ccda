"""The sessions this CLI started, kept in a small file under the user's state directory: which agent, which
directory, when, and the first prompt. ``sessions`` shows the first prompt when the agent gives no title, and
``chat -c`` finds the latest session here when the agent cannot list its sessions."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from .state_files import read_rows, state_dir, update_rows

__all__ = ["RecentSessions", "state_dir"]

KEEP = 500
"""How many sessions the file remembers (the oldest are forgotten first)."""

TITLE_LENGTH = 60


class RecentSessions:
    """Read and written whole (it is small; ``state_files``: safe between concurrent ``acp-session`` processes);
    a missing or unwritable file is treated as empty, never an error."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else state_dir() / "recent-sessions.json"

    def _load(self) -> list[dict[str, Any]]:
        return read_rows(self.path)

    def remember(self, session_id: str, agent: str, cwd: str, first_prompt: str) -> None:
        """Note a session this CLI started or continued (its first prompt kept from the first time)."""

        def change(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
            old = next((row for row in rows if row.get("session_id") == session_id), None)
            prompt = old.get("first_prompt") if old is not None else None
            new = {
                "session_id": session_id,
                "agent": agent,
                "cwd": cwd,
                "first_prompt": prompt if isinstance(prompt, str) else " ".join(first_prompt.split())[:200],
                "used_at": time.time(),
            }
            return [*(row for row in rows if row.get("session_id") != session_id), new][-KEEP:]

        update_rows(self.path, change)

    def title(self, session_id: str) -> str | None:
        """The session's first prompt, shortened, if this CLI started it."""
        for row in self._load():
            if row.get("session_id") == session_id and isinstance(row.get("first_prompt"), str):
                text: str = row["first_prompt"]
                return text if len(text) <= TITLE_LENGTH else text[: TITLE_LENGTH - 1] + "\u2026"
        return None

    def latest(self, agent: str, cwd: str) -> str | None:
        """The id of the session last used with this agent in this directory."""
        rows = [row for row in self._load() if row.get("agent") == agent and row.get("cwd") == cwd]
        return str(rows[-1]["session_id"]) if rows else None
