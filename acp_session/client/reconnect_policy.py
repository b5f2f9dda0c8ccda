"""The reconnect policy and the events a reconnecting connection reports (``acp_session.client.reconnect``).

Plain values, apart from the driver that acts on them (``reconnect.Reconnector``), so that what reads them (the
builder, ``ClientConnection.reconnection``) needs nothing of the driver.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import ClassVar

from ..client_errors import ReconnectFailed

__all__ = ["ReconnectEvent", "ReconnectGaveUp", "ReconnectPolicy", "Reconnected", "Reconnecting"]


@dataclass(frozen=True)
class ReconnectPolicy:
    """How a connection whose transport died is re-established (``ClientBuilder.reconnect``).

    The budget is per *outage*: from a drop until a connection it brought back has stayed up ``stable_after``
    seconds (``outage.py``), so a server that takes each reconnect and cuts it again at once cannot keep a turn
    waiting. Within an outage: ``attempts`` failed dials in a row at most, and ``attempts`` reconnects at most
    (the connection dropping again after the last ends it: ``ReconnectFailed.drops``); before dial n+1 it waits
    ``backoff * 2**(n-1)`` seconds (at most ``max_backoff``), n counting every dial of the outage, so the waits
    keep growing across a flapping connection's drops; each wait varied by up to ``jitter`` of itself either way
    so clients cut off together do not come back together; ``deadline`` bounds the whole outage from its first
    drop (seconds). ``initialize_timeout`` bounds each attempt's ``initialize``. ``idle_timeout`` (None: off)
    and ``probe_timeout`` are the liveness check while a turn runs (see the module docstring).
    """

    attempts: int = 5
    backoff: float = 0.5
    max_backoff: float = 10.0
    jitter: float = 0.2
    deadline: float = 120.0
    initialize_timeout: float = 30.0
    idle_timeout: float | None = 30.0
    probe_timeout: float = 10.0
    stable_after: float = 10.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts must be at least 1 (got {self.attempts})")
        if not 0 <= self.jitter <= 1:
            raise ValueError(f"jitter must be between 0 and 1 (got {self.jitter})")
        for name in ("backoff", "max_backoff", "deadline", "initialize_timeout", "probe_timeout", "stable_after"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")
        if self.idle_timeout is not None and self.idle_timeout <= 0:
            raise ValueError("idle_timeout must be positive or None")

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        """Seconds to wait after failed attempt ``attempt`` (1-based), jitter included."""
        base = min(self.max_backoff, self.backoff * 2.0 ** (attempt - 1))
        spread: float = (rng or random).uniform(-self.jitter, self.jitter)
        return max(0.0, base * (1 + spread))


@dataclass(frozen=True)
class Reconnecting:
    """The transport died (``error``); attempt ``attempt`` of ``attempts`` is starting."""

    kind: ClassVar[str] = "reconnecting"
    attempt: int
    attempts: int
    error: BaseException


@dataclass(frozen=True)
class Reconnected:
    """A new transport is up, initialized, and every session with a recovery was resumed (or reported lost)."""

    kind: ClassVar[str] = "reconnected"
    attempt: int


@dataclass(frozen=True)
class ReconnectGaveUp:
    """The policy gave up; the connection stays closed with ``error``."""

    kind: ClassVar[str] = "gave_up"
    error: ReconnectFailed


ReconnectEvent = Reconnecting | Reconnected | ReconnectGaveUp
