"""A byte budget for the answers to the peer's requests that are in flight (issue 26, 2).

An answer is "in flight" from the moment its handler reserves room for it (before building it: reading a
file, copying a terminal's output) until the transport has taken its encoded frame. A peer that asks for
many large answers at once (48 reads of a 16 MiB file) then gets them a few at a time, as the earlier ones
are written, instead of all being built and queued together: the client waits, nothing is dropped.

Rules, in the order of the reservations (first come, first served, so a large one is not overtaken forever):

- a reservation is granted when it fits in what is left of the budget, or when nothing else is reserved (a
  single answer larger than the whole budget is still sent, alone), never otherwise;
- a granted reservation can later be resized to the frame actually built, without waiting (it only grows
  past what was asked when the handler's estimate was short; the next reservations then wait longer);
- released when the frame is written, when the handler fails or is cancelled, or when the connection ends.
"""

from __future__ import annotations

from collections import deque
from contextvars import ContextVar

import anyio

__all__ = ["DEFAULT_ANSWER_BUDGET", "AnswerBudget", "AnswerTicket", "answer_bound", "reserve_answer"]

DEFAULT_ANSWER_BUDGET = 64 * 1024 * 1024
"""Bytes of encoded answers to the peer's requests that one connection holds at once (see the module doc)."""

_ESCAPED_BYTE = 6  # the longest JSON form of one byte of text: a control character as \u00XX
_ENVELOPE = 512  # the response's envelope and the answer's other fields


def answer_bound(text_bytes: int) -> int:
    """The largest encoded answer carrying ``text_bytes`` bytes of UTF-8 text (every byte a control character)."""
    return _ESCAPED_BYTE * text_bytes + _ENVELOPE


class AnswerTicket:
    """One request's share of its connection's budget (``reserve_answer`` grows it; the connection ends it)."""

    __slots__ = ("_budget", "held")

    def __init__(self, budget: AnswerBudget) -> None:
        self._budget = budget
        self.held = 0

    async def reserve(self, size: int) -> None:
        if self.held:  # already granted: grow without waiting (two waits by one holder could deadlock)
            self.resize(self.held + size)
            return
        await self._budget.acquire(size)
        self.held = size

    def resize(self, size: int) -> None:
        """Hold ``size`` bytes from now on (the frame built); never waits."""
        self._budget.adjust(size - self.held)
        self.held = size

    def release(self) -> None:
        self.resize(0)


class AnswerBudget:
    """``capacity`` bytes shared by a connection's answers in flight; waiters are served in arrival order."""

    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("the answer budget must be at least one byte")
        self.capacity = capacity
        self.used = 0
        self._queue: deque[tuple[int, anyio.Event]] = deque()

    def _fits(self, size: int) -> bool:
        return self.used == 0 or self.used + size <= self.capacity

    async def acquire(self, size: int) -> None:
        if not self._queue and self._fits(size):
            self.used += size
            return
        entry = (size, anyio.Event())
        self._queue.append(entry)
        try:
            await entry[1].wait()
        except BaseException:
            if entry[1].is_set():  # granted just as it was cancelled: give it back
                self.adjust(-size)
            else:
                self._queue.remove(entry)
                self._grant()  # it may have been the head that blocked smaller ones behind it
            raise

    def adjust(self, delta: int) -> None:
        self.used += delta
        if delta < 0:
            self._grant()

    def _grant(self) -> None:
        queue = self._queue
        while queue and self._fits(queue[0][0]):
            size, event = queue.popleft()
            self.used += size
            event.set()


CURRENT_ANSWER: ContextVar[AnswerTicket | None] = ContextVar("acp_session_answer_ticket", default=None)
"""The ticket of the request whose handler is running (set by ``Connection`` for each incoming request)."""


async def reserve_answer(size: int) -> None:
    """Inside a request handler: wait until ``size`` bytes of the connection's answer budget are free for this
    request's answer (an upper bound of its encoded size: ``answer_bound``), and hold them until the answer is
    written. Call it before building a large answer. Outside a connection's request handler it does nothing."""
    ticket = CURRENT_ANSWER.get()
    if ticket is not None and size > 0:
        await ticket.reserve(size)
