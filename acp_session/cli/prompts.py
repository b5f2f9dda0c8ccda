"""Terminal input: lines read off the event loop, and the permission question (allow once / always / reject)."""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Callable
from typing import TextIO

import anyio
import anyio.from_thread
import anyio.lowlevel

from acp_session.schema import PermissionOption, RequestPermissionRequest

__all__ = ["LineReader", "choose_option", "parse_answer", "permission_question"]


class LineReader:
    """Reads lines from a file descriptor in a daemon thread, one read outstanding at a time.

    A read abandoned by cancellation (Ctrl-C, a withdrawn permission question) stays outstanding and the
    next ``readline`` takes its line, so no typed line is lost. Raw ``os.read`` on the descriptor keeps the
    thread away from ``sys.stdin``'s buffer lock, so an exit with a read pending never blocks.
    """

    def __init__(self, fd: int | None = None) -> None:
        self.fd = sys.stdin.fileno() if fd is None else fd
        self._buffer = b""
        self._eof = False
        self._done: anyio.Event | None = None
        self._chunk = b""

    async def readline(self) -> str | None:
        """The next line without its newline, or None at end of input."""
        while True:
            index = self._buffer.find(b"\n")
            if index >= 0:
                line, self._buffer = self._buffer[:index], self._buffer[index + 1 :]
                return line.decode("utf-8", "replace").rstrip("\r")
            if self._eof:
                if self._buffer:
                    rest, self._buffer = self._buffer, b""
                    return rest.decode("utf-8", "replace")
                return None
            await self._read_more()

    async def _read_more(self) -> None:
        if self._done is None:
            done = self._done = anyio.Event()
            token = anyio.lowlevel.current_token()

            def run() -> None:
                try:
                    chunk = os.read(self.fd, 65536)
                except OSError:
                    chunk = b""
                self._chunk = chunk
                with contextlib.suppress(Exception):  # the event loop is gone: nobody is waiting any more
                    anyio.from_thread.run_sync(done.set, token=token)

            threading.Thread(target=run, name="acp-session stdin", daemon=True).start()
        await self._done.wait()
        self._done = None
        chunk, self._chunk = self._chunk, b""
        if chunk:
            self._buffer += chunk
        else:
            self._eof = True


def _options(request: RequestPermissionRequest) -> list[PermissionOption]:
    return list(request.options)


def choose_option(options: list[PermissionOption], want: str) -> str | None:
    """The id of the first option of kind ``allow_once`` / ``allow_always`` / ``reject`` (any reject kind)."""
    for option in options:
        kind = option.kind
        if want == "reject" and isinstance(kind, str) and kind.startswith("reject"):
            return option.option_id
        if kind == want:
            return option.option_id
    return None


_WORDS = {
    "o": "allow_once",
    "once": "allow_once",
    "y": "allow_once",
    "yes": "allow_once",
    "a": "allow_always",
    "always": "allow_always",
    "r": "reject",
    "reject": "reject",
    "n": "reject",
    "no": "reject",
}


def parse_answer(options: list[PermissionOption], text: str) -> str | None:
    """Map a typed answer (o/once/y, a/always, r/reject/n, or the option's number) to an offered option id."""
    text = text.strip().lower()
    if text.isdigit() and 1 <= int(text) <= len(options):
        return options[int(text) - 1].option_id
    want = _WORDS.get(text)
    if want is not None:
        return choose_option(options, want)
    return next((o.option_id for o in options if text in (o.option_id.lower(), o.name.lower())), None)


def _choices(options: list[PermissionOption]) -> str:
    keys = {"allow_once": "o", "allow_always": "a", "reject_once": "r", "reject_always": "r"}
    parts = []
    for number, option in enumerate(options, 1):
        key = keys.get(option.kind if isinstance(option.kind, str) else "", "")
        parts.append(f"[{number}{'/' + key if key else ''}] {option.name}")
    return "  ".join(parts)


async def permission_question(
    request: RequestPermissionRequest,
    reader: LineReader,
    out: TextIO,
    *,
    bold: bool = False,
    asked: Callable[[], None] | None = None,
    answered: Callable[[], None] = lambda: None,
) -> str | None:
    """Ask at the terminal until the answer names an offered option; None (cancelled) at end of input."""
    options = _options(request)
    title = request.title if isinstance(request.title, str) else "The agent asks for permission"
    start, end = ("\x1b[1m", "\x1b[0m") if bold else ("", "")
    out.write(f"{start}? {title}{end}\n  {_choices(options)}\n")
    while True:
        out.write("answer (o = allow once, a = always, r = reject): ")
        out.flush()
        if asked is not None:
            asked()
        line = await reader.readline()
        if line is None:
            out.write("\n")
            out.flush()
            return None
        if not os.isatty(reader.fd):
            out.write(line + "\n")  # not echoed by a terminal: show what was answered
        answered()
        answer = parse_answer(options, line)
        if answer is not None:
            return answer
        out.write(f"  not one of the offered answers: {line!r}\n")
