"""The turn lifecycle tables of ``acp_session._turn_state``, transition by transition (as h11's test_state.py
checks its ``_state.py``): every (state, event) pair of both tables is listed here, written out independently of
the module, with the state it leads to or ``-`` for a pair that must raise ``TurnStateError``. Then the drivers:
``ChatTurn`` refuses a step the table forbids, and ``SessionTrack`` moves a prompt along its table."""

from __future__ import annotations

import msgspec
import pytest

from acp_session._turn_state import (
    OPEN_PROMPT_STATES,
    PROMPT_TABLE,
    TURN_TABLE,
    StateTable,
    TurnStateError,
)
from acp_session.conversation.events import StateChanged
from acp_session.conversation.turn import ChatTurn
from acp_session.errors import AcpError, RequestCancelled
from acp_session.schema import PromptResponse, UpdateSessionNotification
from acp_session.session import SentRequest, SessionTrack, TrackedPrompt

# The request side (TrackedPrompt.status). Columns: the events in PROMPT_TABLE.events order.
PROMPT_GRID = """
            busy      inserted  cancelled  failed
pending     held      inserted  cancelled  failed
held        held      inserted  cancelled  failed
inserted    -         -         -          -
cancelled   -         -         -          -
failed      -         -         -          -
"""

# The chat side (ChatTurn.state). Columns: the events in TURN_TABLE.events order.
TURN_GRID = """
            accept    hold      start     finish    fail
sent        accepted  held      started   -         failed
accepted    -         held      started   -         failed
held        held      -         started   -         failed
started     -         -         -         finished  failed
finished    -         -         -         -         -
failed      -         -         -         -         -
"""


def grid(text: str) -> tuple[list[str], dict[tuple[str, str], str | None]]:
    header, *rows = [line.split() for line in text.strip().splitlines()]
    cells: dict[tuple[str, str], str | None] = {}
    states = []
    for state, *targets in rows:
        states.append(state)
        assert len(targets) == len(header), state
        for event, target in zip(header, targets, strict=True):
            cells[(state, event)] = None if target == "-" else target
    return states, cells


TABLES = [("prompt", PROMPT_TABLE, PROMPT_GRID), ("turn", TURN_TABLE, TURN_GRID)]
PAIRS = [
    pytest.param(table, state, event, target, id=f"{name}-{state}-{event}")
    for name, table, text in TABLES
    for (state, event), target in grid(text)[1].items()
]


@pytest.mark.parametrize(("name", "table", "text"), TABLES)
def test_the_grid_covers_every_state_and_event(name: str, table: StateTable[str, str], text: str) -> None:
    states, cells = grid(text)
    assert tuple(states) == table.states
    assert {event for _, event in cells} == set(table.events)
    assert set(table.transitions) <= set(cells), "a transition from a state or with an event the table does not list"
    assert set(table.transitions.values()) <= set(table.states)


@pytest.mark.parametrize(("table", "state", "event", "target"), PAIRS)
def test_each_transition(table: StateTable[str, str], state: str, event: str, target: str | None) -> None:
    if target is None:
        assert not table.allows(state, event)
        with pytest.raises(TurnStateError) as caught:
            table.next(state, event)
        assert (caught.value.table, caught.value.state, caught.value.event) == (table.name, state, event)
        assert f"event {event!r} is not allowed in state {state!r}" in str(caught.value)
        assert not isinstance(caught.value, AcpError)  # a driver bug, never mistaken for the agent's error
    else:
        assert table.allows(state, event)
        assert table.next(state, event) == target


def test_final_and_open_states() -> None:
    assert [s for s in PROMPT_TABLE.states if PROMPT_TABLE.final(s)] == ["inserted", "cancelled", "failed"]
    assert {s for s in PROMPT_TABLE.states if not PROMPT_TABLE.final(s)} == OPEN_PROMPT_STATES
    assert [s for s in TURN_TABLE.states if TURN_TABLE.final(s)] == ["finished", "failed"]


# -- the drivers ------------------------------------------------------------------------------------------------------

IDLE = StateChanged("idle", "running", "end_turn", None, None, True, None)


@pytest.mark.anyio
async def test_a_chat_turn_walks_the_table_and_summarises_it() -> None:
    turn = ChatTurn()
    assert (turn.state, turn.status) == ("sent", "sent")
    turn.advance("accept")
    assert (turn.state, turn.status) == ("accepted", "sent")
    turn.advance("hold")
    assert (turn.state, turn.status) == ("held", "sent")
    turn.start("m1")
    assert (turn.state, turn.status, turn.message_id) == ("started", "started", "m1")
    response = turn.finish(IDLE)
    assert (turn.state, turn.status, turn.finished) == ("finished", "finished", True)
    assert (await turn).stop_reason == response.stop_reason == "end_turn"
    turn.fail(RuntimeError("late"))  # failing an ended turn changes nothing
    assert (turn.state, turn.error) == ("finished", None)


@pytest.mark.anyio
async def test_a_chat_turn_refuses_a_step_the_table_forbids() -> None:
    turn = ChatTurn()
    with pytest.raises(TurnStateError, match="'finish' is not allowed in state 'sent'"):
        turn.finish(IDLE)  # never started: no response is made up
    assert turn.state == "sent" and not turn.finished
    turn.fail(RuntimeError("refused"))
    assert (turn.state, turn.status) == ("failed", "finished")
    with pytest.raises(TurnStateError, match="'start' is not allowed in state 'failed'"):
        turn.start("m2")  # an ended turn is never revived
    assert turn.message_id is None
    with pytest.raises(RuntimeError, match="refused"):
        await turn


def tracked_prompt() -> TrackedPrompt:
    return TrackedPrompt(request=SentRequest.__new__(SentRequest), blocks=[])


def state_note(state: str) -> UpdateSessionNotification:
    return msgspec.convert(
        {"sessionId": "s", "update": {"sessionUpdate": "state_update", "state": state}}, UpdateSessionNotification
    )


@pytest.mark.parametrize(
    ("busy", "answer", "error", "status"),
    [
        (False, PromptResponse(message_id="u1"), None, "inserted"),
        (True, PromptResponse(message_id="u1"), None, "inserted"),
        (True, None, RequestCancelled("withdrawn"), "cancelled"),
        (False, None, AcpError("refused"), "failed"),
    ],
)
def test_a_session_track_moves_its_prompts_along_the_table(
    busy: bool, answer: PromptResponse | None, error: AcpError | None, status: str
) -> None:
    track = SessionTrack("s")
    prompt = tracked_prompt()
    track.prompts.append(prompt)
    if busy:
        track.apply(state_note("running"))
        assert prompt.status == "held"
        track.apply(state_note("requires_action"))
        assert prompt.status == "held"
    track.settle(prompt, answer, error)
    assert prompt.status == status
    track.apply(state_note("running"))  # a later busy report leaves an answered prompt alone
    assert prompt.status == status
    with pytest.raises(TurnStateError):
        track.settle(prompt, answer, error)  # one answer per prompt
