"""What one outage of a connection may still spend (sans-IO; ``reconnect.py`` drives it with the clock).

An outage starts when a connection drops and lasts until a connection it brought back has stayed up for the
policy's ``stable_after`` seconds: a connection that comes back and drops again sooner (a flapping server that
answers ``initialize`` and ``session/resume`` and then cuts the stream) continues the same outage instead of
starting a fresh one. So a budget over the whole outage holds however the dials go: at most ``attempts``
reconnects (each later drop counts one), at most ``attempts`` failed dials in a row, all within ``deadline``
seconds of the first drop; and the back-off between dials keeps growing over the outage instead of starting
again at ``backoff`` after every drop.
"""

from __future__ import annotations

import random
from typing import Protocol

__all__ = ["Outage", "OutagePolicy", "OutageTracker"]


class OutagePolicy(Protocol):
    """What an outage's budget reads of ``reconnect.ReconnectPolicy`` (a Protocol, so this sans-IO module needs
    nothing from the driver above it)."""

    @property
    def attempts(self) -> int: ...
    @property
    def deadline(self) -> float: ...
    @property
    def stable_after(self) -> float: ...
    def delay(self, attempt: int, rng: random.Random | None = None) -> float: ...


class Outage:
    """One outage: when it began, how many dials it made, how many times it came back and dropped again."""

    __slots__ = ("dials", "drops", "started", "up_since")

    def __init__(self, started: float) -> None:
        self.started = started
        self.dials = 0
        """Dials made in this outage, successful ones included (the back-off's exponent)."""
        self.drops = 0
        """Connections this outage brought back that dropped again before ``stable_after``."""
        self.up_since: float | None = None
        """When the last connection came back (None: none has yet)."""


class OutageTracker:
    """The outages of one connection under ``policy``: ``dropped(now)`` for each drop, ``came_back(now)`` for each
    reconnect, and in between what the recovery may still do."""

    def __init__(self, policy: OutagePolicy, rng: random.Random | None = None) -> None:
        self.policy = policy
        self.rng = rng or random.Random()
        self.current: Outage | None = None

    def dropped(self, now: float) -> Outage:
        """A connection dropped: the outage it continues (it came back less than ``stable_after`` ago), or a new one."""
        outage = self.current
        if outage is None or outage.up_since is None or now - outage.up_since >= self.policy.stable_after:
            outage = self.current = Outage(now)
        else:
            outage.drops += 1
        return outage

    def came_back(self, now: float) -> None:
        if self.current is not None:
            self.current.up_since = now

    def flapping(self) -> bool:
        """Whether the outage has had its ``attempts`` reconnects, each dropped again: give up, do not dial."""
        outage = self.current
        return outage is not None and outage.drops >= self.policy.attempts

    def remaining(self, now: float) -> float:
        """Seconds left of the outage's ``deadline`` (0 or less: past it)."""
        outage = self.current
        return self.policy.deadline if outage is None else outage.started + self.policy.deadline - now

    def delay(self) -> float:
        """Seconds to wait before the next dial: none before the outage's first, then the back-off of as many
        dials as the outage has made (so it keeps growing across the drops of a flapping connection)."""
        outage = self.current
        if outage is None or outage.dials == 0:
            return 0.0
        return self.policy.delay(outage.dials, self.rng)

    def dialing(self) -> int:
        """A dial starts: its number in the outage (1-based)."""
        assert self.current is not None
        self.current.dials += 1
        return self.current.dials
