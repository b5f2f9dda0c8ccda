"""The CLI's small state files (named sessions, recent sessions): JSON lists read whole and rewritten whole, by
any number of ``acp-session`` processes at once.

Each change holds the file's own lock (``NAME.lock`` beside it; ``flock``, released when its holder dies, even by
SIGKILL) across its read and its write, so two processes never lose each other's rows. The new list goes to a
temporary file of a unique name in the same folder, flushed to disk, then renamed over the old one: a reader sees
the old list or the new one, never half of one. A file that is not such a list is set aside
(``NAME.corrupt-TIME``, with a warning on stderr) rather than emptied, so what it held can still be recovered.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..registry.lock import locked, replace_file
from .screen import say

__all__ = ["LOCK_WAIT", "read_rows", "state_dir", "update_rows"]

LOCK_WAIT = 10.0
"""How long a change waits for another process's change of the same file (each takes milliseconds)."""

Rows = list[dict[str, Any]]


def state_dir() -> Path:
    """``$XDG_STATE_HOME/acp-session``, else ``~/.local/state/acp-session``."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "acp-session"


class _Corrupt(Exception):
    """The file exists but is not a JSON list."""


def _parse(path: Path) -> Rows:
    """The objects of the list at ``path`` (none when there is no file); ``_Corrupt`` for anything else."""
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        return []
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise _Corrupt(f"not JSON ({str(exc)[:80]})") from None
    if not isinstance(data, list):
        raise _Corrupt("not a JSON list")
    return [row for row in data if isinstance(row, dict)]


def _lock_path(path: Path) -> Path:
    return path.with_name(path.name + ".lock")


def _set_aside(path: Path, why: str) -> None:
    """Rename the unreadable file out of the way (under the lock), saying where it went."""
    kept = path.with_name(f"{path.name}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}")
    try:
        path.rename(kept)
    except FileNotFoundError:
        return  # someone else set it aside meanwhile
    except OSError as exc:
        say(f"acp-session: warning: {path} is unreadable ({why}) and cannot be set aside: {exc.strerror or exc}")
        return
    say(f"acp-session: warning: {path} was unreadable ({why}); kept as {kept.name}, starting a new list")


def _read_repairing(path: Path) -> Rows:
    """The rows; a corrupt file is set aside (the caller holds the lock)."""
    try:
        return _parse(path)
    except _Corrupt as exc:
        _set_aside(path, str(exc))
        return []
    except OSError:
        return []


def read_rows(path: Path) -> Rows:
    """The file's rows: none for a missing or unreadable file; a corrupt one is set aside with a warning."""
    try:
        return _parse(path)
    except OSError:
        return []
    except _Corrupt:
        pass
    with contextlib.suppress(OSError), locked(_lock_path(path), wait=LOCK_WAIT) as held:
        if held:  # a writer may have replaced it meanwhile: read again before judging
            return _read_repairing(path)
    return []


def _write(path: Path, rows: Rows) -> None:
    """Replace the file with ``rows`` through a temporary file of a unique name, synced before the rename."""
    replace_file(path, json.dumps(rows, ensure_ascii=False).encode("utf-8"))


def update_rows(path: Path, change: Callable[[Rows], Rows]) -> None:
    """Read, ``change`` and write the file back under its lock. A lock held longer than ``LOCK_WAIT`` loses this
    change, with a warning; an unwritable folder loses it silently (these files are conveniences, never an
    error)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with locked(_lock_path(path), wait=LOCK_WAIT) as held:
            if not held:
                say(f"acp-session: warning: {path} stayed locked by another process for {LOCK_WAIT:g} s; not updated")
                return
            _write(path, change(_read_repairing(path)))
    except OSError:
        pass
