"""Advisory file locks between processes sharing the agent cache (``flock``: released when a holder dies,
even by SIGKILL, so a crashed install never blocks the next one).

One exclusive lock per agent serialises its installs; a shared lock on a version's ``.in-use`` file, held
while an agent runs from that version, keeps another process's install from removing it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks; installs are not serialised there
    fcntl = None  # type: ignore[assignment]

__all__ = ["locked", "try_locked"]

POLL = 0.05


def _open(path: Path) -> int:
    return os.open(path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)


def _try(fd: int, shared: bool) -> bool:
    if fcntl is None:
        return True
    try:
        fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


@contextmanager
def locked(path: Path, *, wait: float, shared: bool = False) -> Iterator[bool]:
    """Hold the lock on ``path`` (created if needed), waiting at most ``wait`` seconds; yields whether it is
    held (False: another process kept it that long)."""
    fd = _open(path)
    try:
        ends = time.monotonic() + wait
        held = _try(fd, shared)
        while not held and time.monotonic() < ends:
            time.sleep(POLL)
            held = _try(fd, shared)
        yield held
    finally:
        os.close(fd)  # closing releases the lock


@contextmanager
def try_locked(path: Path, *, create: bool = True) -> Iterator[bool]:
    """The exclusive lock on ``path`` if nobody holds it now (True), without waiting. Without ``create`` an
    absent file is free (nobody can hold it) and is not made."""
    try:
        fd = _open(path) if create else os.open(path, os.O_RDWR | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        yield True
        return
    try:
        yield _try(fd, shared=False)
    finally:
        os.close(fd)
