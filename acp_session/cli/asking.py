"""A permission request during a CLI run: approved by ``--approve-all``, else asked at the terminal (``prompts``);
one that nobody can answer (stdin is not a terminal and its input has ended) is answered cancelled and says why,
once on stderr and on its ``[permission]`` line, and the run's exit code says so (``EXIT_UNASKED``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from acp_session.schema import RequestPermissionRequest

from .exits import EXIT_UNASKED
from .prompts import choose_option, permission_question
from .render import color_enabled
from .screen import say
from .status import WORKING
from .typing_echo import typing_echoed

if TYPE_CHECKING:
    from .app import ChatApp

__all__ = ["UNASKED", "ask_permission"]

UNASKED = "stdin is not a terminal and its input has ended"
"""Why a question could not be asked (the ``reason`` of its ``--json`` record)."""


async def ask_permission(app: ChatApp, request: RequestPermissionRequest) -> str | None:
    """The chosen option's id, or None (cancelled); shown as an answered question either way."""
    options = list(request.options)
    title = request.title if isinstance(request.title, str) else "permission"
    described = [(o.option_id, o.name, str(o.kind)) for o in options]
    reason: str | None = None
    if app.args.yes:
        answer = choose_option(options, "allow_once") or choose_option(options, "allow_always")
    else:
        app.renderer.break_line()
        app.status.stop()
        bold = not app.json and color_enabled(app.question_out)
        try:
            with typing_echoed():  # a turn hides typing (typing_echo.py); the answer is seen as it is typed
                answer = await permission_question(request, app.reader, app.question_out, bold=bold)
        except anyio.get_cancelled_exc_class():
            app.renderer.break_line()
            app.question_out.write("(the question was withdrawn)\n")
            app.question_out.flush()
            raise
        finally:
            if app.active is not None:
                app.status.start(WORKING)
        if answer is None and not app.interactive:  # (at a terminal, Ctrl-D is an answer)
            reason = _unasked(app)
    app.renderer.permission(title, described, answer, reason=reason)
    return answer


def _unasked(app: ChatApp) -> str:
    """A question nobody could answer. Said once on stderr; the run's exit code says it too (``EXIT_UNASKED``
    instead of 0), since a script would want to know."""
    app.unasked = True
    if app.hint_first("unasked"):
        app.renderer.break_line()
        say(
            f"acp-session: the agent asked for permission and nobody could answer ({UNASKED}): it was answered "
            "cancelled. A policy answers without asking: --approve-all, --approve-reads, --deny-all, "
            f"--allow KIND[:GLOB] (exit code {EXIT_UNASKED})"
        )
    return UNASKED
