"""The lifecycle of one prompt's turn, as two sans-IO state tables: states, events, the allowed transitions.

A turn is followed on two sides, each by its own table:

* ``PROMPT_TABLE``, the request side (``TrackedPrompt.status``, driven by ``ActiveSession`` and its
  ``SessionTrack``): the ``session/prompt`` request is ``pending``; it is ``held`` once the agent reports itself
  busy (``running`` / ``requires_action``) while it is unanswered; its answer makes it ``inserted``, or
  ``cancelled`` / ``failed``.
* ``TURN_TABLE``, the chat side (``ChatTurn.state``, driven by ``Conversation``): which turn the agent's updates
  belong to. A turn is ``sent``; an answer that names it before its updates can be routed to it makes it
  ``accepted``; named as the owner of updates held back behind an earlier unclaimed user message it is
  ``held``; it is ``started`` when it receives its own updates (its user message or its answer inserted it and
  nothing earlier is held), and ends ``finished`` (the agent's idle completion) or ``failed`` (an error answer,
  the connection lost, the session closed). ``ChatTurn.status`` is the public summary: sent, started, finished.

Any other (state, event) pair raises ``TurnStateError``: the drivers never skip a step or revive an ended turn
silently. Nothing here does I/O or knows the wire; tests/test_turn_state.py checks every pair of both tables.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

__all__ = [
    "OPEN_PROMPT_STATES",
    "PROMPT_TABLE",
    "TURN_TABLE",
    "PromptEvent",
    "PromptState",
    "StateTable",
    "TurnEvent",
    "TurnState",
    "TurnStateError",
]

S = TypeVar("S", bound=str)
E = TypeVar("E", bound=str)


class TurnStateError(RuntimeError):
    """An event the turn's current state does not allow: a bug in the driver, never the agent's doing (so not an
    ``AcpError``, which callers catch as the peer's)."""

    def __init__(self, table: str, state: str, event: str) -> None:
        super().__init__(f"{table}: event {event!r} is not allowed in state {state!r}")
        self.table = table
        self.state = state
        self.event = event


@dataclass(frozen=True)
class StateTable(Generic[S, E]):
    """A transition table: ``next(state, event)`` is the new state, or ``TurnStateError``."""

    name: str
    states: tuple[S, ...]
    events: tuple[E, ...]
    transitions: Mapping[tuple[S, E], S]

    def next(self, state: S, event: E) -> S:
        try:
            return self.transitions[(state, event)]
        except KeyError:
            raise TurnStateError(self.name, state, event) from None

    def allows(self, state: S, event: E) -> bool:
        return (state, event) in self.transitions

    def final(self, state: S) -> bool:
        """No event leaves ``state``."""
        return not any(key[0] == state for key in self.transitions)


# -- the request side: TrackedPrompt.status --------------------------------------------------------------------------

PromptState = Literal["pending", "held", "inserted", "cancelled", "failed"]
PromptEvent = Literal["busy", "inserted", "cancelled", "failed"]
"""``busy``: the agent reported ``running`` / ``requires_action`` while the prompt is unanswered; the others:
its answer (a result, ``RequestCancelled``, any other error)."""

PROMPT_TABLE: StateTable[PromptState, PromptEvent] = StateTable(
    "prompt",
    ("pending", "held", "inserted", "cancelled", "failed"),
    ("busy", "inserted", "cancelled", "failed"),
    {
        ("pending", "busy"): "held",
        ("held", "busy"): "held",  # still busy: a held prompt stays held
        **{(state, answer): answer for state in ("pending", "held") for answer in ("inserted", "cancelled", "failed")},
    },
)
OPEN_PROMPT_STATES: frozenset[PromptState] = frozenset({"pending", "held"})
"""The states of a prompt not answered yet."""


# -- the chat side: ChatTurn.state -----------------------------------------------------------------------------------

TurnState = Literal["sent", "accepted", "held", "started", "finished", "failed"]
TurnEvent = Literal["accept", "hold", "start", "finish", "fail"]
"""``accept``: a successful answer before the turn's updates can be routed to it; ``hold``: named as the owner of
held-back updates; ``start``: its updates go to it from now on; ``finish``: the agent's idle completion;
``fail``: an error answer, the connection lost or the session closed."""

TURN_TABLE: StateTable[TurnState, TurnEvent] = StateTable(
    "turn",
    ("sent", "accepted", "held", "started", "finished", "failed"),
    ("accept", "hold", "start", "finish", "fail"),
    {
        ("sent", "accept"): "accepted",
        ("sent", "hold"): "held",
        ("sent", "start"): "started",
        ("sent", "fail"): "failed",
        ("accepted", "hold"): "held",
        ("accepted", "start"): "started",
        ("accepted", "fail"): "failed",
        ("held", "accept"): "held",  # its user message named it first; the answer only confirms it
        ("held", "start"): "started",
        ("held", "fail"): "failed",
        ("started", "finish"): "finished",
        ("started", "fail"): "failed",
    },
)
