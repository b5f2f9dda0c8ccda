"""Pending interactive requests from the agent (permission, elicitation), so they can be answered cancelled.

Each handler runs inside its own cancel scope. Cancelling the scope (``cancel_active_work``, ``close``), or the
agent's ``$/cancel_request`` cancelling the rpc task, stops the handler and answers with the cancelled outcome
instead of an error, as the prompt-lifecycle docs ask of clients.

A handler is called in wire order with the session's events: each request runs in a task of its own, which the
event loop may run before the task reading a turn's events has taken the events that came before the request
(the tool call a permission question is about, say). So ``readers_caught_up`` first waits until every reader of
the session's events (``ReaderMark``: a turn being iterated, a stream, the application's async update handler)
has taken what was queued for it when the request came, as long as the readers keep taking: a reader busy with
something else (waiting on the user, on I/O) holds a question back for a few passes of the event loop at most.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import anyio.lowlevel

__all__ = ["Interaction", "InteractionRegistry", "ReaderMark", "call_handler", "readers_caught_up"]

Kind = Literal["permission", "elicitation"]


async def call_handler(fn: Callable[[Any], Any], arg: Any) -> Any:
    """Call a plain function or a coroutine function alike."""
    outcome = fn(arg)
    if inspect.isawaitable(outcome):
        outcome = await outcome
    return outcome


@dataclass(frozen=True)
class ReaderMark:
    """Where one reader of a session's events stood when an interactive request came (see the module docstring)."""

    reached: Callable[[], bool]
    """True once the reader has taken (and come back for more after) everything queued for it at the mark."""
    moved: Callable[[], int]
    """A count that grows with each step the reader takes."""


PATIENCE = 16
"""Passes of the event loop in a row in which no reader short of its mark took a step, after which
``readers_caught_up`` stops waiting for them. Several, not one: a reader may await a few times per event (a UI
drawing it), and trio shuffles each pass, so a reader that runs every pass may run just before this task in one
and just after it in the next."""


async def readers_caught_up(marks: list[ReaderMark]) -> None:
    """Let the event loop run until each reader reached its mark, or until ``PATIENCE`` passes of it went by in
    which none of those short of it moved (one that does not read now, waiting for the user or for I/O, is not
    waited for: it never holds a question back for long)."""
    waiting = [mark for mark in marks if not mark.reached()]
    counts = [mark.moved() for mark in waiting]
    still = 0  # passes in a row in which none of them moved
    while waiting:
        await anyio.lowlevel.checkpoint()  # the readers woken before this request run
        now = [mark.moved() for mark in waiting]
        still = still + 1 if now == counts else 0
        if still == PATIENCE:
            return
        left = [(mark, count) for mark, count in zip(waiting, now, strict=True) if not mark.reached()]
        waiting, counts = [mark for mark, _ in left], [count for _, count in left]


@dataclass(eq=False)
class Interaction:
    """One request from the agent waiting for the application's answer."""

    kind: Kind
    session_id: str | None
    tool_call_id: str | None
    terminal_id: str | None
    params: Any
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)

    def subject_in(self, background: Iterable[tuple[str, str]]) -> bool:
        """True when this request's subject is background work (``("tool_call", id)`` / ``("terminal", id)``)."""
        items = set(background)
        return ("tool_call", self.tool_call_id or "") in items or ("terminal", self.terminal_id or "") in items


class InteractionRegistry:
    """The interactive requests whose handlers are still running."""

    def __init__(self) -> None:
        self._items: set[Interaction] = set()

    def pending(self, session_id: str | None = None) -> list[Interaction]:
        return [i for i in self._items if session_id is None or i.session_id == session_id]

    async def run(self, item: Interaction, fn: Callable[[Any], Any], cancelled: Callable[[], Any]) -> Any:
        """Run ``fn(item.params)``; when it is cancelled (by us or by the peer) answer ``cancelled()``."""
        self._items.add(item)
        try:
            with item.scope:
                return await call_handler(fn, item.params)
            return cancelled()  # our own scope was cancelled
        except anyio.get_cancelled_exc_class():
            # The peer's $/cancel_request (or closing) cancelled the rpc task: answer cancelled, not -32800.
            return cancelled()
        finally:
            self._items.discard(item)

    def cancel(self, session_id: str | None, keep: Callable[[Interaction], bool] = lambda _: False) -> int:
        """Cancel the pending requests of ``session_id`` (all sessions when None) except those ``keep`` accepts."""
        count = 0
        for item in self.pending(session_id):
            if not keep(item):
                item.scope.cancel()
                count += 1
        return count
