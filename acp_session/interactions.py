"""Pending interactive requests from the agent (permission, elicitation), so they can be answered cancelled.

Each handler runs inside its own cancel scope. Cancelling the scope (``cancel_active_work``, ``close``), or the
agent's ``$/cancel_request`` cancelling the rpc task, stops the handler and answers with the cancelled outcome
instead of an error, as the prompt-lifecycle docs ask of clients.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio

__all__ = ["Interaction", "InteractionRegistry", "call_handler"]

Kind = Literal["permission", "elicitation"]


async def call_handler(fn: Callable[[Any], Any], arg: Any) -> Any:
    """Call a plain function or a coroutine function alike."""
    outcome = fn(arg)
    if inspect.isawaitable(outcome):
        outcome = await outcome
    return outcome


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
