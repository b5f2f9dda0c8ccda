"""``--record FILE`` / ``--append``: where a transcript may be written.

A transcript holds the prompts and the contents of every file the agent read or wrote, so it is never written
through a symbolic link (a planted ``session.jsonl -> ~/.bashrc`` would otherwise grow the user's shell start-up
file) and never added silently to an existing file: ``--record`` makes a new file, ``--append`` adds to one. The
file is opened here with ``O_NOFOLLOW`` (and ``O_EXCL`` when new), and the open file is what the library records
to, so a link swapped in after the check is not followed either.
"""

from __future__ import annotations

import os
import stat
from typing import IO

__all__ = ["check_record", "open_record"]


def check_record(path: str | None, append: bool) -> str | None:
    """Why the command line's ``--record`` / ``--append`` cannot be used (a usage error), or None."""
    if path is None:
        return "--append adds to a --record FILE; give --record FILE too" if append else None
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"--record {path}: {exc.strerror or exc}"
    if stat.S_ISLNK(info.st_mode):
        return f"--record {path} is a symbolic link (to {os.readlink(path)}); a transcript is never written through one"
    if stat.S_ISDIR(info.st_mode):
        return f"--record {path} is a directory"
    if not append:
        return f"--record {path} already exists; add --append to add to it, or name a new file"
    return None


def open_record(path: str, append: bool) -> IO[bytes]:
    """The transcript file, opened for the library to append to: created new (``OSError`` if it exists by now),
    or with ``append`` created or appended to; a symbolic link is refused either way (``OSError``, ELOOP)."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if append else os.O_EXCL)
    flags |= getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags, 0o600)
    return os.fdopen(fd, "ab")
