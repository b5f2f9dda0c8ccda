"""Which subagent (child) sessions a connection tracks (internal), at most ``Limits.subagents``.

An agent can announce children without end; each tracked child costs a ``SessionTrack``. Past the bound, a new
child takes the place of the oldest finished one (its own or its parent's latest state report said idle): that
child's track, and those of the children it announced, are dropped and counted in ``folded``. While every kept
child still runs, a new one is refused: counted in ``refused``, one warning per connection, and its updates are
then those of a session the connection does not know (``on_session_update`` only). A child the application
listens to itself (``client.session(child_id)`` with a listener) is never folded. Sans-IO: the connection's
update routing calls it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from ..session import SessionTrack

__all__ = ["SubagentTracks"]

_log = logging.getLogger("acp_session.client")


class SubagentTracks:
    """The connection's child tracks, oldest first, and which of them have finished (oldest finish first)."""

    def __init__(self, tracks: dict[str, SessionTrack], limit: int) -> None:
        self.tracks = tracks  # the connection's tracks by session id (ConnectionHub.session_tracks)
        self.limit = limit
        self.kept: dict[str, None] = {}
        self.finished: dict[str, None] = {}
        self.folded = 0
        """Child tracks dropped to make room (the oldest finished first, each with its own children)."""
        self.refused = 0
        """Announcements of new children not tracked because every kept child still ran."""
        self._warned = False
        self.unfollow: Callable[[str], None] = lambda session_id: None
        """Called with each child dropped (the hub stops reading its stream, on a transport that has one)."""

    def admit(self, parent: SessionTrack, child_id: str, make: Callable[[str], SessionTrack]) -> SessionTrack | None:
        """The track for a child ``parent`` announced for the first time, made by ``make``; None if refused."""
        if len(self.kept) >= self.limit and not self._fold_oldest_finished():
            self.refused += 1
            if not self._warned:
                self._warned = True
                _log.warning(
                    "the agent announced more subagents than a connection keeps (Limits.subagents = %d), and all "
                    "of them still run: new ones are not tracked (their updates reach only on_session_update)",
                    self.limit,
                )
            return None
        child = make(child_id)
        self.kept[child_id] = None
        parent.subagents[child_id] = None
        return child

    def reported(self, child_id: str, state: str) -> None:
        """A kept child's state, from its own ``state_update`` or its parent's mirror of it."""
        if child_id in self.kept:
            self.finished.pop(child_id, None)
            if state == "idle":
                self.finished[child_id] = None  # finished last: folded last

    def _fold_oldest_finished(self) -> bool:
        """Drop the oldest finished child's track (and what it announced); False if no child has finished."""
        while self.finished:
            child_id = next(iter(self.finished))
            del self.finished[child_id]
            track = self.tracks.get(child_id)
            if track is None or track.parent is None:  # closed meanwhile: its place is free
                self.kept.pop(child_id, None)
                return True
            if not track.listeners:  # one the application listens to itself stays
                self._drop(track)
                return True
        return False

    def _drop(self, track: SessionTrack) -> None:
        parent = self.tracks.get(track.parent or "")
        if parent is not None:
            parent.subagents.pop(track.session_id, None)
        stack = [track]
        while stack:
            dropped = stack.pop()
            if self.tracks.get(dropped.session_id) is dropped:
                del self.tracks[dropped.session_id]
            self.kept.pop(dropped.session_id, None)
            self.finished.pop(dropped.session_id, None)
            self.folded += 1
            self.unfollow(dropped.session_id)
            for child_id in dropped.subagents:
                child = self.tracks.get(child_id)
                if child is not None and child_id in self.kept and not child.listeners:
                    stack.append(child)
