"""Terminal input: lines read off the event loop, and the permission question (allow once / always / reject)."""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import anyio
import anyio.from_thread
import anyio.lowlevel

from acp_session.schema import PermissionOption, RequestPermissionRequest

from .safe_text import terminal_safe
from .screen import BOLD, Screen, Styled

if TYPE_CHECKING:
    from .editor import EditorReader

__all__ = ["LineReader", "answer_hint", "can_edit", "choose_option", "parse_answer", "permission_question"]


class LineReader:
    """Reads lines off the event loop, in a daemon thread, one read outstanding at a time.

    On a terminal (stdin and stdout both terminals, the stdlib ``readline`` module present) a line is read with
    ``input()``: readline's line editing (arrows, Ctrl-A/E/K/W, Ctrl-L clears the screen) and history (Up/Down,
    Ctrl-R), the history kept in ``history_file`` across runs. The prompt is readline's, on the terminal.
    Otherwise (stdin piped, or stdout redirected) lines are read raw from the descriptor and the prompt is
    written to ``prompt_out`` (stderr), so it never lands among the answers.

    A read abandoned by cancellation (Ctrl-C, a withdrawn permission question) stays outstanding and the
    next ``readline`` takes its line, so no typed line is lost. Raw ``os.read`` on the descriptor keeps the
    thread away from ``sys.stdin``'s buffer lock, so an exit with a read pending never blocks; ``close()``
    puts the terminal back as it was if readline still had it.
    """

    HISTORY_LENGTH = 1000

    def __init__(
        self,
        fd: int | None = None,
        *,
        editing: bool | None = None,
        history_file: Path | None = None,
        prompt_out: TextIO | None = None,
    ) -> None:
        self.fd = sys.stdin.fileno() if fd is None else fd
        self.editing = can_edit(self.fd) if editing is None else editing
        self.history_file = history_file
        self.prompt_out = prompt_out if prompt_out is not None else sys.stderr
        # Raw input not yet returned; a bytearray grows in place and ``_scanned`` bytes of it hold no newline,
        # so a line of many megabytes costs one pass instead of a copy and a search per 64 KiB read.
        self._buffer = bytearray()
        self._scanned = 0
        self._eof = False
        self._done: anyio.Event | None = None
        self._chunk = b""
        self._line: str | None = None  # what input() returned (editing)
        self._pending_prompt: str | None = None  # the prompt readline shows for the outstanding read
        self._terminal: list[Any] | None = None
        self._history_loaded = False

    # -- editing (readline) ------------------------------------------------------------------------

    def _start_editing(self) -> None:
        if self._history_loaded:
            return
        self._history_loaded = True
        import readline
        import termios

        with contextlib.suppress(termios.error, OSError):
            self._terminal = termios.tcgetattr(self.fd)
        readline.set_history_length(self.HISTORY_LENGTH)
        readline.set_auto_history(False)  # lines are added by readline() (not permission answers, no repeats)
        if self.history_file is not None and self.history_file.is_file():
            with contextlib.suppress(OSError):
                readline.read_history_file(self.history_file)

    def redraw(self) -> None:
        """Show the outstanding read's prompt and the text typed so far again (after other output on the
        terminal, e.g. the hint Ctrl-C at the prompt prints); nothing when no read is outstanding."""
        if self._done is None or not self._pending_prompt:
            return
        out = sys.stdout if self.editing else self.prompt_out
        typed = ""
        if self.editing:
            import readline

            typed = readline.get_line_buffer()
        out.write(self._pending_prompt.replace("\x01", "").replace("\x02", "") + typed)
        out.flush()

    def close(self) -> None:
        """Save the history; give the terminal back as it was if readline still holds it (a read pending)."""
        if not self.editing or not self._history_loaded:
            return
        if self.history_file is not None:
            import readline

            with contextlib.suppress(OSError):
                self.history_file.parent.mkdir(parents=True, exist_ok=True)
                readline.write_history_file(self.history_file)
        if self._done is not None and self._terminal is not None:
            import termios

            with contextlib.suppress(termios.error, OSError):
                termios.tcsetattr(self.fd, termios.TCSANOW, self._terminal)
            sys.stdout.write("\n")
            sys.stdout.flush()

    # -- reading -----------------------------------------------------------------------------------

    async def readline(self, prompt: str = "", *, remember: bool = True) -> str | None:
        """The next line without its newline, or None at end of input, after showing ``prompt`` (which may hold
        ANSI styling). ``remember``: the line goes into the editing history (not for permission answers)."""
        if self.editing:
            return await self._edited_line(prompt, remember)
        if prompt:
            self.prompt_out.write(prompt)
            self.prompt_out.flush()
        self._pending_prompt = prompt
        try:
            while True:
                index = self._buffer.find(b"\n", self._scanned)
                if index >= 0:
                    line = self._buffer[:index]
                    del self._buffer[: index + 1]
                    self._scanned = 0
                    return line.decode("utf-8", "replace").rstrip("\r")
                self._scanned = len(self._buffer)
                if self._eof:
                    if self._buffer:
                        rest, self._buffer, self._scanned = self._buffer, bytearray(), 0
                        return rest.decode("utf-8", "replace")
                    if prompt and os.isatty(self.fd):  # Ctrl-D after the prompt: the shell starts a new line
                        self.prompt_out.write("\n")
                        self.prompt_out.flush()
                    return None
                await self._wait(self._read_raw)
        finally:
            self._pending_prompt = None

    async def _edited_line(self, prompt: str, remember: bool) -> str | None:
        self._start_editing()
        if self._eof:
            return None
        if self._done is None:
            self._pending_prompt = _readline_prompt(prompt)
        else:  # a read abandoned earlier is still on the terminal: show this prompt instead
            self._pending_prompt = prompt
            self.redraw()
        pending = self._pending_prompt
        await self._wait(lambda: self._input(pending))
        self._pending_prompt = None
        line, self._line = self._line, None
        if line is None:
            self._eof = True
            sys.stdout.write("\n")  # Ctrl-D after the prompt: the shell starts a new line
            sys.stdout.flush()
            return None
        if remember and line.strip():
            import readline

            count = readline.get_current_history_length()
            if count == 0 or readline.get_history_item(count) != line:
                readline.add_history(line)
        return line

    def _input(self, prompt: str) -> None:
        try:
            self._line = input(prompt)
        except (EOFError, OSError, ValueError):
            self._line = None

    def _read_raw(self) -> None:
        try:
            chunk = os.read(self.fd, 65536)
        except OSError:
            chunk = b""
        if chunk:
            self._buffer += chunk
        else:
            self._eof = True

    async def _wait(self, read: Callable[[], None]) -> None:
        """Run ``read`` in a daemon thread unless one is outstanding, and wait for it to finish."""
        if self._done is None:
            done = self._done = anyio.Event()
            token = anyio.lowlevel.current_token()

            def run() -> None:
                read()
                with contextlib.suppress(Exception):  # the event loop is gone: nobody is waiting any more
                    anyio.from_thread.run_sync(done.set, token=token)

            threading.Thread(target=run, name="acp-session stdin", daemon=True).start()
        await self._done.wait()
        self._done = None


def can_edit(fd: int) -> bool:
    """readline works for ``input()`` only when stdin and stdout are the process's own terminals."""
    if fd != 0 or os.environ.get("TERM") == "dumb":
        return False
    try:
        import readline  # noqa: F401
    except ImportError:  # a Python without it: raw reads, the terminal's own line editing
        return False
    try:
        return sys.stdin.fileno() == 0 and sys.stdout.fileno() == 1 and os.isatty(0) and os.isatty(1)
    except (AttributeError, ValueError, OSError):
        return False


def _readline_prompt(prompt: str) -> str:
    """Mark ANSI escapes as invisible for readline (``\\x01...\\x02``), so it knows the prompt's width."""
    return re.sub(r"(\x1b\[[0-9;]*m)", "\x01\\1\x02", prompt)


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
    typed = " ".join(text.split())
    for option in options:
        shown = " ".join(terminal_safe(option.name).split()).lower()  # the name as the question showed it
        if text in (option.option_id.lower(), option.name.lower()) or typed == shown:
            return option.option_id
    return None


_KEY_WORDS = {"o": "allow once", "a": "always", "r": "reject"}
_KIND_WORDS = {
    "allow_once": "allow once",
    "allow_always": "allow always",
    "reject_once": "reject once",
    "reject_always": "reject always",
}
NAME_WIDTH = 48
"""An option's name is shown cut to this many characters, so the real key and kind stay on the screen."""


def _keys(options: list[PermissionOption]) -> dict[int, str]:
    """Option index -> the letter that selects it: drawn from the options' kinds (``parse_answer`` of the
    letter), never from their names, and shown on exactly the option it selects."""
    keys: dict[int, str] = {}
    for key in _KEY_WORDS:
        chosen = parse_answer(options, key)
        index = next((i for i, option in enumerate(options) if option.option_id == chosen), None)
        if index is not None and index not in keys:
            keys[index] = key
    return keys


def _kind_words(option: PermissionOption) -> str:
    kind = option.kind if isinstance(option.kind, str) else str(option.kind)
    return _KIND_WORDS.get(kind, kind)


def _choices(options: list[PermissionOption]) -> list[str]:
    """One line per option: its number, its name (cleaned, on one line, cut short) and then what it does: the
    letter and the kind, from the option's kind, so a name cannot pass itself off as another choice."""
    keys = _keys(options)
    names = [terminal_safe(option.name) for option in options]
    names = [name if len(name) <= NAME_WIDTH else name[: NAME_WIDTH - 1] + "\u2026" for name in names]
    width = max((len(name) for name in names), default=0)
    lines = []
    for index, (option, name) in enumerate(zip(options, names, strict=True)):
        key = keys.get(index)
        action = f"{key}: {_kind_words(option)}" if key else _kind_words(option)
        lines.append(f"  {index + 1}. {name.ljust(width)}  ({action})")
    return lines


def answer_hint(options: list[PermissionOption]) -> str:
    """What may be typed, from the options offered: ``o = allow once, r = reject`` when no ``allow_always``
    option is offered; the numbers when no option has a letter."""
    keys = sorted(_keys(options).items())
    if not keys:
        return f"1-{len(options)}" if len(options) > 1 else "1"
    return ", ".join(f"{key} = {_KEY_WORDS[key]}" for _, key in keys)


async def permission_question(
    request: RequestPermissionRequest,
    reader: LineReader | EditorReader,
    out: TextIO,
    *,
    bold: bool = False,
) -> str | None:
    """Ask at the terminal (the question on ``out``, stderr) until the answer names an offered option; None
    (cancelled) at end of input. The title and the names are the agent's: written cleaned, on one line each."""
    options = _options(request)
    title = request.title if isinstance(request.title, str) else "The agent asks for permission"
    screen = Screen(out, color=bold)
    screen.line(Styled(f"? {title}", (BOLD,)))
    for choice in _choices(options):
        screen.line(choice)
    prompt = f"answer ({answer_hint(options)}): "
    while True:
        line = await reader.readline(prompt, remember=False)
        if line is None:
            screen.line()
            return None
        if not reader.editing and not os.isatty(reader.fd):
            screen.line(line)  # not echoed by a terminal: show what was answered
        answer = parse_answer(options, line)
        if answer is not None:
            return answer
        screen.line(f"  not one of the offered answers: {line!r}")
