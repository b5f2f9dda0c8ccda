"""A one-line status on the terminal (stderr) while nothing else is shown: ``starting <agent>… 5 s`` while the
agent starts, ``working… 3 s (Ctrl-C cancels)`` while a turn waits for the agent. It is erased before anything
else is written, and never shown when stderr is not a terminal."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

import anyio

from .screen import Screen

__all__ = ["WORKING", "StatusLine"]

WORKING = "working\u2026 {s} s (Ctrl-C cancels)"
"""The status while a turn waits for the agent."""

SPINNER = "\u280b\u2819\u2839\u2838\u283c\u2834\u2826\u2827\u2807\u280f"


class StatusLine:
    """Shows ``label`` (``{s}`` in it: the seconds since ``start()``) after ``delay`` seconds of quiet;
    ``clear()`` (called before any other output) erases it and restarts the quiet period. ``allowed`` says
    whether the cursor is at the start of a line (no status in the middle of streamed text)."""

    def __init__(self, out: TextIO, *, enabled: bool | None = None, delay: float = 1.0, tick: float = 0.25) -> None:
        self.out = out
        self.screen = Screen(out)
        if enabled is None:
            try:
                enabled = out.isatty()
            except (AttributeError, ValueError):
                enabled = False
        self.enabled = enabled
        self.delay = delay
        self.tick = tick
        self.label: str | None = None
        self.allowed: Callable[[], bool] = lambda: True
        self._since = 0.0
        self._quiet_since = 0.0
        self._shown = False
        self._frame = 0

    def start(self, label: str) -> None:
        """Show ``label`` (after the quiet delay) until ``stop()``."""
        self.label = label
        self._since = self._quiet_since = time.monotonic()

    def stop(self) -> None:
        self.clear()
        self.label = None

    def clear(self) -> None:
        """Erase the line if shown (before other output) and restart the quiet period."""
        self._quiet_since = time.monotonic()
        if self._shown:
            self._shown = False
            self.screen.erase_line()

    def _draw(self) -> None:
        if self.label is None or not self.enabled or not self.allowed():
            return
        now = time.monotonic()
        if now - self._quiet_since < self.delay:
            return
        self._frame = (self._frame + 1) % len(SPINNER)
        text = self.label.replace("{s}", str(int(now - self._since)))
        self.screen.erase_line()
        self.screen.write(f"{SPINNER[self._frame]} {text}")
        self._shown = True

    async def run(self) -> None:
        """Redraw every ``tick`` seconds until cancelled."""
        if not self.enabled:
            return
        while True:
            await anyio.sleep(self.tick)
            self._draw()
