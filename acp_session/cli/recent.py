"""The sessions this CLI started, kept in a small file under the user's state directory: which agent, which
directory, when, and the first prompt. ``sessions`` shows the first prompt when the agent gives no title, and
``chat -c`` finds the latest session here when the agent cannot list its sessions."""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Any

__all__ = ["RecentSessions", "load_rows", "save_rows", "state_dir"]

KEEP = 500
"""How many sessions the file remembers (the oldest are forgotten first)."""

TITLE_LENGTH = 60


def state_dir() -> Path:
    """``$XDG_STATE_HOME/acp-session``, else ``~/.local/state/acp-session``."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "acp-session"


def load_rows(path: Path) -> list[dict[str, Any]]:
    """The objects of a small JSON list file; a missing or broken file is empty, never an error."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [row for row in data if isinstance(row, dict)] if isinstance(data, list) else []


def save_rows(path: Path, rows: list[dict[str, Any]]) -> None:
    """Write the list whole, through a temporary file; an unwritable folder is silently skipped."""
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
        tmp.replace(path)


class RecentSessions:
    """Read and written whole (it is small); a broken or unwritable file is treated as empty, never an error."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path if path is not None else state_dir() / "recent-sessions.json"

    def _load(self) -> list[dict[str, Any]]:
        return load_rows(self.path)

    def remember(self, session_id: str, agent: str, cwd: str, first_prompt: str) -> None:
        """Note a session this CLI started or continued (its first prompt kept from the first time)."""
        rows = self._load()
        old = next((row for row in rows if row.get("session_id") == session_id), None)
        rows = [row for row in rows if row.get("session_id") != session_id]
        prompt = old.get("first_prompt") if old is not None else None
        rows.append(
            {
                "session_id": session_id,
                "agent": agent,
                "cwd": cwd,
                "first_prompt": prompt if isinstance(prompt, str) else " ".join(first_prompt.split())[:200],
                "used_at": time.time(),
            }
        )
        save_rows(self.path, rows[-KEEP:])

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
