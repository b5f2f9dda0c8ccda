"""``TurnOrder`` (sans-IO): a v1 session's turns start and end in send order, each answer ending its own turn."""

from __future__ import annotations

from collections.abc import Callable

from acp_session.protocol.v1.turns import TurnOrder


def report(log: list[str], what: str) -> Callable[[], None]:
    return lambda: log.append(what)


def test_a_prompt_sent_while_another_runs_starts_when_that_one_is_answered() -> None:
    log: list[str] = []
    order = TurnOrder()
    a = order.add(report(log, "start A"))
    b = order.add(report(log, "start B"))
    assert log == ["start A"]
    order.answered(a, report(log, "end A"), inserted=True)
    assert log == ["start A", "end A", "start B"]
    order.answered(b, report(log, "end B"), inserted=True)
    assert log == ["start A", "end A", "start B", "end B"] and len(order) == 0


def test_answers_out_of_order_end_in_order_and_a_refused_held_prompt_never_starts() -> None:
    log: list[str] = []
    order = TurnOrder()
    a, b, c = (order.add(report(log, f"start {name}")) for name in "ABC")
    order.answered(c, report(log, "end C"), inserted=True)  # accepted before A and B: waits for them
    order.answered(b, report(log, "end B"), inserted=False)  # refused while held
    assert log == ["start A"]
    order.answered(a, report(log, "end A"), inserted=True)
    assert log == ["start A", "end A", "start C", "end C"] and len(order) == 0
    order.answered(a, report(log, "end A again"), inserted=True)  # a second report of one answer: nothing
    assert log[-1] == "end C"


def test_nothing_starts_once_the_connection_is_gone() -> None:
    log: list[str] = []
    order = TurnOrder()
    a = order.add(report(log, "start A"))
    b = order.add(report(log, "start B"))
    order.answered(a, report(log, "end A"), inserted=False, go_on=False)
    order.answered(b, report(log, "end B"), inserted=False, go_on=False)
    assert log == ["start A", "end A"] and len(order) == 0
