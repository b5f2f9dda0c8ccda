"""What is typed while a turn streams is not echoed: the terminal would write it (and a Ctrl-C's ``^C``) wherever
the cursor stands, in the middle of the reply, and a Markdown block being redrawn in place would then be redrawn
one line too low, its first line left behind as a copy. The typed text is not lost: the terminal keeps it, and the
next prompt reads it. Only the echo flag is touched, only on the terminal this process is in the foreground of,
and it is put back as it was, whatever else changed the terminal's modes meanwhile (a prompt editor asking a
permission question)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

__all__ = ["typing_echoed", "typing_hidden"]


def _terminal_fd() -> int | None:
    """stdin's descriptor when it is a terminal this process may change (a background job may not: the
    terminal would stop it), else None."""
    try:
        fd = sys.stdin.fileno()
        if not os.isatty(fd) or os.tcgetpgrp(fd) != os.getpgrp():
            return None
    except (AttributeError, ValueError, OSError):
        return None
    try:
        import termios  # noqa: F401 - not on every platform
    except ImportError:
        return None
    return fd


def _set_echo(fd: int, on: bool) -> bool | None:
    """Turn echo on or off; whether it was on before (None: the terminal's modes could not be changed)."""
    import termios

    try:
        modes = termios.tcgetattr(fd)
        before = bool(modes[3] & termios.ECHO)
        if before != on:
            modes[3] = modes[3] | termios.ECHO if on else modes[3] & ~termios.ECHO
            termios.tcsetattr(fd, termios.TCSANOW, modes)  # TCSANOW: typed-ahead input is kept
    except (termios.error, OSError):
        return None
    return before


@contextlib.contextmanager
def _echo(on: bool) -> Iterator[None]:
    fd = _terminal_fd()
    before = None if fd is None else _set_echo(fd, on)
    try:
        yield
    finally:
        if fd is not None and before is not None and before != on:
            _set_echo(fd, before)


def typing_hidden() -> contextlib.AbstractContextManager[None]:
    """While a turn streams: typed text is kept for the next prompt but not echoed into the output."""
    return _echo(False)


def typing_echoed() -> contextlib.AbstractContextManager[None]:
    """While a question is asked during a turn: what is typed is echoed again (a line read without an editor)."""
    return _echo(True)
