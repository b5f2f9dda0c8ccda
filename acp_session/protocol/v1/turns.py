"""The order of one v1 session's turns, so that each ``session/prompt`` answer ends its own turn only.

v1 has no user message and no turn state on the wire: the adapter reports a prompt's user message and
``running`` when its turn starts and ``idle`` with the stop reason when its answer comes. A prompt sent while an
earlier one of the session is unanswered is held, as a v2 agent holds it: its turn starts once every earlier
turn ended, so the earlier answer (an agent that cancels the running prompt when a new one comes answers it
``cancelled``) ends only the earlier turn. Sans-IO: what to report is passed in as callables.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["TurnOrder", "V1Turn"]

Report = Callable[[], None]


class V1Turn:
    """One prompt's turn: reported started (user message, ``running``) and finished (``idle``) in send order."""

    __slots__ = ("finish", "start", "started")

    def __init__(self, start: Report) -> None:
        self.start = start
        self.started = False
        self.finish: Report | None = None  # set by a successful answer that came before the turn started


class TurnOrder:
    """The turns of one session not yet finished, in send order; only the first has started."""

    __slots__ = ("_turns",)

    def __init__(self) -> None:
        self._turns: list[V1Turn] = []

    def __len__(self) -> int:
        return len(self._turns)

    def add(self, start: Report) -> V1Turn:
        """A prompt was sent: its turn starts now if no earlier one is unfinished, else when they are."""
        turn = V1Turn(start)
        self._turns.append(turn)
        self._advance()
        return turn

    def answered(self, turn: V1Turn, finish: Report, *, inserted: bool, go_on: bool = True) -> None:
        """``turn``'s prompt was answered: ``finish`` reports its end. A started turn ends now and the next one
        starts (unless ``go_on`` is false: the connection is gone, nothing more starts). A turn not started yet
        that was refused (``inserted`` false) never starts; one that was accepted ends in its place, after the
        turns before it."""
        if turn not in self._turns:
            return
        if turn.started:
            self._turns.remove(turn)
            finish()
        elif not inserted or not go_on:
            self._turns.remove(turn)
        else:
            turn.finish = finish
        if go_on:
            self._advance()

    def _advance(self) -> None:
        while self._turns:
            head = self._turns[0]
            if head.started:
                return
            head.started = True
            head.start()
            if head.finish is None:
                return
            self._turns.pop(0)
            head.finish()
