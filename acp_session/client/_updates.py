"""The route of incoming updates (a base class of the connection's hub, kept apart for size): each update is
tracked first (its session's ``SessionTrack``, a subagent's track made when its parent announces it), then handed
to the session's listeners (a run of one session's updates in one call to a lone ``BatchUpdateListener``), then
to the application's ``on_session_update`` handler, through a bounded queue when that handler is async.

``ConnectionHub.__init__`` sets every attribute used here; the annotations name them for the type checker.
"""

from __future__ import annotations

import inspect
import logging
import math
from collections.abc import Awaitable, Callable, Iterator
from itertools import chain
from typing import TYPE_CHECKING, Any

import anyio
import msgspec
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from ..interactions import ReaderMark
from ..rpc import Connection
from ..schema import unstable as mu
from ..schema.types import (
    StateUpdate,
    UpdateSessionNotification,
)
from ..session import (
    TRACKED_UPDATES,
    BatchUpdateListener,
    SessionTrack,
    UpdateListener,
)
from ._subagents import SubagentTracks

if TYPE_CHECKING:
    from ..session import Limits

if TYPE_CHECKING:
    from ._settings import BuilderSettings


_log = logging.getLogger("acp_session.client")
_STATE_UPDATES = (mu.StateUpdate, StateUpdate)

__all__ = ["UpdateRouting"]


class UpdateRouting:
    """Tracking and delivery of the agent's ``session/update`` notifications."""

    rpc: Connection
    builder: BuilderSettings
    limits: Limits
    session_tracks: dict[str, SessionTrack]
    subagent_tracks: SubagentTracks
    opening: int
    unknown_session_updates: int
    _provisional: int
    _update_inflight: int
    _updates_queued: int  # updates handed to the application's update queue so far
    _updates_handled: int  # of them, those its handler finished
    _updates_idle: anyio.Event
    _update_is_async: bool
    _update_send: MemoryObjectSendStream[Any]

    def session_track(self, session_id: str) -> SessionTrack:
        raise NotImplementedError  # ConnectionHub's

    def _arrival_track(self, session_id: str) -> SessionTrack | None:
        """The track for an update of a session this connection has no track for: while a ``session/new`` is in
        flight it may be the session being created, so a bounded number of such sessions keep their early
        updates; otherwise None (the update is counted and only the application's handler sees it)."""
        if not self.opening or self._provisional >= self.limits.early_sessions:
            self.unknown_session_updates += 1
            return None
        self._provisional += 1
        track = self.session_tracks[session_id] = SessionTrack(session_id, max_cancellable=self.limits.cancellable)
        track.early = []  # perhaps the session a pending session/new is creating
        return track

    def receive_update(self, note: UpdateSessionNotification) -> Any:
        """Runs inline in the reader (sync): track first, then the application's handler, in arrival order.

        Async handlers go through this connection's own bounded queue, counted at arrival, so ``resume_session``
        can wait for every replayed update that arrived before its response.
        """
        track = self.session_tracks.get(note.session_id) or self._arrival_track(note.session_id)
        if track is None:
            return self._to_application(note)  # a session this connection never opened or resumed
        if type(note.update) in TRACKED_UPDATES:  # a set probe instead of four isinstance calls per chunk
            self._apply_tracked(track, note)
        listeners = track.listeners
        if not listeners and track.parent is not None:
            listeners = self._root_listeners(track)
        if listeners:
            try:
                for listener in listeners:
                    listener(note)
            except Exception:
                self._update_failed("listener")
        elif track.early is not None and len(track.early) < self.limits.early_updates:
            track.early.append(note)
        return self._to_application(note)

    def _update_failed(self, what: str) -> None:
        """A session update listener or the application's handler raised: the first traceback of each is logged,
        the rest counted (``Connection.peer_log``), so an agent streaming what makes it fail writes no more."""
        self.rpc.peer_log.exception(f"session update {what} failures", "session update %s failed", what, logger=_log)

    def _to_application(self, note: UpdateSessionNotification) -> Any:
        """Hand an update to the builder's ``on_session_update`` handler (every session's, in order)."""
        fn = self.builder._update
        if fn is None:
            return None
        if self._update_is_async:
            return self._queue_update(note)
        outcome = fn(note)
        if outcome is not None and inspect.isawaitable(outcome):
            return self._queue_update(outcome)
        return None

    def receive_updates(self, notes: list[UpdateSessionNotification]) -> Any:
        """``receive_update`` for a run of updates that one read brought in: same outcome, same order.

        Without an application handler, each stretch of one session's updates is tracked, then handed on in
        one call (``_hand_run``). An application handler that is a ``BatchUpdateListener`` gets the whole run
        in one call to its ``many`` once every update of it is tracked and handed to the session listeners.
        With another handler, updates go note by note (a sync handler with no listeners is called in a tight
        loop). Returns None, or an awaitable that delivers the rest once the application's
        update queue has room.
        """
        fn = self.builder._update
        if fn is None:
            self._track_runs(notes)
            return None
        if type(fn) is BatchUpdateListener:  # the whole run to the application in one call, after tracking
            self._track_runs(notes)
            try:
                fn.many(notes)
            except Exception:
                self._update_failed("handler")
            return None
        track = self.session_tracks.get(notes[0].session_id)
        if (
            track is not None
            and track.early is None
            and not track.listeners
            and track.parent is None
            and not self._update_is_async
        ):
            steps = self._update_steps(notes, (track.session_id, fn))
        else:
            steps = self._update_steps(notes)
        for waiting in steps:
            return self._finish_updates(chain((waiting,), steps))
        return None

    def _track_runs(self, notes: list[UpdateSessionNotification]) -> None:
        """Track each update, then hand each stretch of one session's updates to its listeners (forward only)."""
        tracks = self.session_tracks
        tracked = TRACKED_UPDATES
        current = notes[0].session_id
        track = tracks.get(current) or self._arrival_track(current)
        start = 0
        for index, note in enumerate(notes):
            session_id = note.session_id
            if session_id != current:
                if track is not None and start < index:
                    self._hand_run(track, notes[start:index])
                start, current = index, session_id
                track = tracks.get(session_id) or self._arrival_track(session_id)
                if track is None:
                    continue  # counted by _arrival_track
            if track is None:
                if index > start:
                    self.unknown_session_updates += 1
            elif type(note.update) in tracked:  # a set probe instead of four isinstance calls per chunk
                self._apply_tracked(track, note)
        if track is not None:
            self._hand_run(track, notes if start == 0 else notes[start:])

    def _apply_tracked(self, track: SessionTrack, note: UpdateSessionNotification) -> None:
        """An update of a tracked kind changes the session's track; an idle after a cancel closes the barrier."""
        track.apply(note)
        if track.cancel_barrier == math.inf and track.state == "idle":
            track.cancel_barrier = self.rpc.requests_received  # the cancelled work ended here
        update: Any = note.update
        kind = type(update)
        if kind is mu.SubagentUpdate:
            self._child_track(track, update)
        elif track.parent is not None and isinstance(update, _STATE_UPDATES):
            self.subagent_tracks.reported(track.session_id, update.state)

    def _child_track(self, parent: SessionTrack, update: mu.SubagentUpdate) -> None:
        """A subagent (Preview): the parent announced a child session. Its track is made here (within
        ``Limits.subagents``: ``SubagentTracks``), so the child's own updates are tracked and handed to the
        parent's listeners (a ``Conversation`` folds them into the child's state); its ``capabilities`` say
        whether the client may cancel it. A transport that reads each session on a stream of its own (HTTP) is
        told to read the child's: only a tracked child gets one."""
        child_id = update.session_id
        child = self.session_tracks.get(child_id)
        if child is None:
            if child_id == parent.session_id:
                return
            child = self.subagent_tracks.admit(parent, child_id, self.session_track)
            if child is None:
                return  # refused: every kept child still runs
        follow = getattr(self.rpc.transport, "follow_session", None)
        if follow is not None:
            follow(child_id)  # nothing when its stream is open already
        if child.parent is None and child_id != parent.session_id:
            child.parent = parent.session_id
        caps = update.capabilities
        if caps is not msgspec.UNSET:
            cancel = getattr(caps, "cancel", None)
            child.cancellable = cancel is not None and cancel is not msgspec.UNSET
        mirrored = getattr(update.state, "state", None)
        if isinstance(mirrored, str):
            self.subagent_tracks.reported(child_id, mirrored)

    def _root_listeners(self, track: SessionTrack) -> list[UpdateListener]:
        """A child session's updates go to the listeners of the nearest ancestor that has some."""
        seen = 0
        while track.parent is not None and seen < 64:  # a cycle an agent made up cannot loop
            parent = self.session_tracks.get(track.parent)
            if parent is None:
                return []
            if parent.listeners:
                return parent.listeners
            track, seen = parent, seen + 1
        return []

    def _hand_run(self, track: SessionTrack, run: list[UpdateSessionNotification]) -> None:
        """A tracked stretch of one session's updates to its listeners: in one call to a lone
        ``BatchUpdateListener``, else note by note; kept for later while a ``session/new`` may still claim it."""
        listeners = track.listeners
        if not listeners and track.parent is not None:
            listeners = self._root_listeners(track)
        if len(listeners) == 1 and type(listeners[0]) is BatchUpdateListener:
            try:
                listeners[0].many(run)
            except Exception:
                self._update_failed("listener")
            return
        if listeners:
            for note in run:
                try:
                    for listener in listeners:
                        listener(note)
                except Exception:
                    self._update_failed("listener")
            return
        early = track.early
        if early is not None:
            early.extend(run[: max(0, self.limits.early_updates - len(early))])

    async def _finish_updates(self, steps: Iterator[Awaitable[Any]]) -> None:
        for waiting in steps:
            try:
                await waiting
            except Exception:
                self._update_failed("handler")

    def _update_steps(
        self, notes: list[UpdateSessionNotification], direct: tuple[str, Callable[[Any], Any]] | None = None
    ) -> Iterator[Awaitable[Any]]:
        """``receive_update`` note by note; yields each awaitable to finish before the next note.

        ``direct`` is ``(session_id, handler)`` for a session without listeners and a sync application
        handler: its untracked updates go straight to the handler.
        """
        for note in notes:
            try:
                if direct is None or note.session_id != direct[0] or type(note.update) in TRACKED_UPDATES:
                    outcome = self.receive_update(note)
                else:
                    outcome = direct[1](note)
                    if outcome is not None and inspect.isawaitable(outcome):
                        outcome = self._queue_update(outcome)
            except Exception:
                self._update_failed("handler")
                continue
            if outcome is not None:
                yield outcome

    def reader_marks(self, session_id: str | None) -> list[ReaderMark]:
        """Where the readers of ``session_id``'s events stand now: its conversation's turns and streams (a parent's
        for a subagent's request: the child's events reach it) and the application's async update handler. An
        interactive request of the session waits for them before its handler (``interactions.readers_caught_up``)."""
        marks: list[ReaderMark] = []
        track = self.session_tracks.get(session_id) if session_id is not None else None
        for _ in range(64):  # a cycle of parents an agent made up cannot loop
            if track is None:
                break
            for readers in track.readers:
                marks += readers()
            track = self.session_tracks.get(track.parent) if track.parent is not None else None
        target = self._updates_queued
        if self._updates_handled < target:
            marks.append(ReaderMark(lambda: self._updates_handled >= target, lambda: self._updates_handled))
        return marks

    def _queue_update(self, item: Any) -> Any:
        self._update_inflight += 1
        self._updates_queued += 1
        if self._updates_idle.is_set():
            self._updates_idle = anyio.Event()
        try:
            self._update_send.send_nowait(item)
        except anyio.WouldBlock:
            return self._update_send.send(item)  # full: the rpc layer awaits this in order (backpressure)
        return None

    async def _update_consumer(self, receive: MemoryObjectReceiveStream[Any]) -> None:
        fn = self.builder._update
        assert fn is not None
        async with receive:
            async for item in receive:
                try:
                    await (item if inspect.isawaitable(item) else fn(item))
                except Exception:
                    self._update_failed("handler")
                finally:
                    self._update_inflight -= 1
                    self._updates_handled += 1
                    if self._update_inflight == 0:
                        self._updates_idle.set()

    async def updates_drained(self) -> None:
        while self._update_inflight:
            await self._updates_idle.wait()
