"""``ClientConnection.reconnection``: the reconnect policy in force and what it has done so far.

The policy and its events are ``acp_session.client.reconnect``; this is the connection's read side of them.
Without a policy (``ClientBuilder.reconnect(False)``, or a transport that does not reconnect by default) a
drop ends the connection, ``policy`` is None and no event comes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from .reconnect_policy import ReconnectEvent, ReconnectPolicy

__all__ = ["Reconnection"]


class ReconnectorView(Protocol):
    """What ``Reconnection`` reads of the driver (``reconnect.Reconnector``)."""

    @property
    def policy(self) -> ReconnectPolicy: ...
    @property
    def reconnects(self) -> int: ...
    @property
    def reconnecting(self) -> bool: ...
    @property
    def listeners(self) -> list[Callable[[ReconnectEvent], None]]: ...


class ReconnectionSource(Protocol):
    """What ``Reconnection`` reads (the connection's hub), so this module needs nothing of the hub's or the
    driver's."""

    @property
    def reconnector(self) -> ReconnectorView | None: ...


class Reconnection:
    """The connection's reconnect policy, its count of reconnects, and its events."""

    __slots__ = ("_hub",)

    def __init__(self, hub: ReconnectionSource) -> None:
        self._hub = hub

    @property
    def policy(self) -> ReconnectPolicy | None:
        """The reconnect policy in force (``ClientBuilder.reconnect``), None when a drop ends the connection."""
        reconnector = self._hub.reconnector
        return None if reconnector is None else reconnector.policy

    @property
    def count(self) -> int:
        """How many times this connection came back after its transport died."""
        reconnector = self._hub.reconnector
        return 0 if reconnector is None else reconnector.reconnects

    @property
    def in_progress(self) -> bool:
        """True while a lost transport is being replaced (calls wait for it; ``ClientConnection.rpc`` is the old
        one)."""
        reconnector = self._hub.reconnector
        return reconnector is not None and reconnector.reconnecting

    def on_event(self, fn: Callable[[ReconnectEvent], Any]) -> Callable[[], None]:
        """Call ``fn`` with each ``Reconnecting``, ``Reconnected`` and ``ReconnectGaveUp`` event of this connection
        (``acp_session.client.reconnect``); returns a function that removes it. Without a policy none comes."""
        listeners = self._hub.reconnector.listeners if self._hub.reconnector is not None else []
        listeners.append(fn)
        return lambda: listeners.remove(fn) if fn in listeners else None
