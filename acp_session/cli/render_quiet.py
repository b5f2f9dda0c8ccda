"""``--format quiet``: only the turn's final reply on stdout, for scripts; failures still go to stderr."""

from __future__ import annotations

import sys
from typing import TextIO

from acp_session.conversation import ChatDone, ChatError, ChatEvent, ContextUsage, TimelineEntry

from .messages import describe
from .render import Renderer
from .screen import Screen, say

__all__ = ["QuietRenderer"]


class QuietRenderer(Renderer):
    """Prints the reply of each turn once it ended (control characters dropped); nothing else on stdout."""

    def __init__(self, out: TextIO | None = None) -> None:
        self.screen = Screen(out if out is not None else sys.stdout, before_write=lambda: self.before_output())

    def event(self, event: ChatEvent) -> None:
        if isinstance(event, ChatDone):
            text = event.response.text.rstrip("\n")
            if text:
                self.screen.line(text, newlines=True)
            error = event.response.error
            if error is not None:
                say(f"acp-session: the turn ended with an error: {error.message}")
        elif isinstance(event, ChatError):
            say(f"acp-session: {describe(event.error, stderr_tail=self.stderr_tail()).message}")

    def history(self, entries: list[TimelineEntry]) -> None:
        """A resumed session's history is not the reply."""

    def info(self, text: str) -> None:
        """Progress and hints are left out."""

    def permission(
        self, title: str, options: list[tuple[str, str, str]], answer: str | None, *, reason: str | None = None
    ) -> None:
        """The answer is not the reply."""

    def usage(self, usage: ContextUsage) -> None:
        """Nor is the usage."""
