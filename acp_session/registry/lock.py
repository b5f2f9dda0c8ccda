"""Advisory file locks between processes sharing a file (``flock``: released when a holder dies, even by
SIGKILL, so a crashed install never blocks the next one), and the atomic replacement of a file's contents.

One exclusive lock per agent serialises its installs; a shared lock on a version's ``.in-use`` file, held
while an agent runs from that version, keeps another process's install from removing it. The CLI's state
files and the reference agent's session store hold a file's lock across its read and its ``replace_file``, so
processes writing the same file never lose each other's changes.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory locks; installs are not serialised there
    fcntl = None  # type: ignore[assignment]

__all__ = ["locked", "replace_file", "try_locked"]

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
def locked(path: Path, *, wait: float, shared: bool = False, poll: float = POLL) -> Iterator[bool]:
    """Hold the lock on ``path`` (created if needed), waiting at most ``wait`` seconds, trying again every
    ``poll`` seconds; yields whether it is held (False: another process kept it that long)."""
    fd = _open(path)
    try:
        ends = time.monotonic() + wait
        held = _try(fd, shared)
        while not held and time.monotonic() < ends:
            time.sleep(poll)
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


def replace_file(path: Path, data: bytes, *, sync: bool = True) -> None:
    """Replace ``path``'s contents with ``data``: written to a temporary file of a unique name in the same folder
    (flushed to disk with ``sync``), then renamed over it, so a reader sees the old contents or the new ones,
    never half of either, and two writers never share a temporary file."""
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            if sync:
                file.flush()
                os.fsync(file.fileno())
        os.replace(name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise
