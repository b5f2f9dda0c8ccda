"""How a ``Conversation`` comes through a reconnect (a base class of it; the driver is ``client/reconnect.py``).

When its connection's transport dies and a reconnect policy is on, the conversation's turns stay as they are.
Once the connection is back, ``recover`` resumes the session with a full replay. The replay is folded into the
state *quietly* (no turn and no stream sees it) inside a resume window that closes with the agent's history as
the whole truth: entities it re-sends are rebuilt in place (merged by id: no duplicate), entities it never
mentions are forgotten (a restarted agent lost them). Only then does the live listener take over, in the same
step, so no live update slips between the replay and the live stream (the barrier). Each turn in flight then
gets what it missed, computed from the rebuilt state against what it had shown at the drop (no gap, nothing
twice), and ends as the agent says: finished if the agent is idle again, still running if it is not, with
``TurnLost`` if its user message is not in the agent's history, with ``SessionLost`` if the session is gone.
The open ``receive_steps()`` / ``receive_chunks()`` streams get the same from the same comparison, in the same step
(``catch_up.py``: a ``StreamReconnected`` marker, then what they missed, marked ``replayed``); they end with
``SessionLost`` or ``ReconnectFailed`` as the turns do.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from acp_session.client.connection import hub_of
from acp_session.client.opening import open_resumed_session
from acp_session.client.reconnect import ReconnectEvent, ReconnectGaveUp, Reconnecting
from acp_session.client_errors import CapabilityNotSupported, SessionLost, TurnLost
from acp_session.conversation.catch_up import Seen, missed
from acp_session.conversation.chat_events import (
    STOP_REASON_UNKNOWN,
    ChatReconnected,
    ChatReconnecting,
    ChatSessionLost,
)
from acp_session.conversation.entities import Message, TimelineEntry, ToolCall
from acp_session.conversation.events import StateChanged
from acp_session.conversation.routing import TurnRouting
from acp_session.conversation.streams import StreamReconnected
from acp_session.conversation.turn import ChatTurn
from acp_session.errors import ResourceNotFound
from acp_session.protocol.base import LAST_STOP_REASON_META
from acp_session.schema import ResumeSessionResponse, StateUpdate, UpdateSessionNotification
from acp_session.session import BatchUpdateListener

if TYPE_CHECKING:
    from acp_session.client import ClientConnection
    from acp_session.client.active_session import ActiveSession
    from acp_session.mcp.servers import McpServerConfig

__all__ = ["ReconnectRecovery"]


class ReconnectRecovery(TurnRouting):
    """The reconnect half of ``Conversation`` (its ``SessionRecovery``)."""

    _listener: BatchUpdateListener
    _detach: Any
    _scope: Any
    _mcp_servers: list[McpServerConfig]
    _additional_directories: list[str | os.PathLike[str]]
    _shown_at_drop: dict[int, Any] | None = None  # a reconnect under way: what each entity had shown
    _seen_at_drop: Seen | None = None  # and what the streams had been shown (catch_up.py)
    _attempt: int
    _streams: Any
    _v1_cut = False  # the last recovery ended a v1 turn in flight (its stop reason: the load's, or unknown)

    def _bind(self, session: ActiveSession) -> None:
        raise NotImplementedError

    def _fail_all(self, error: BaseException) -> None:
        raise NotImplementedError

    def _register_recovery(self, session: ActiveSession) -> None:
        """While bound to a session of a connection that reconnects, this conversation is its recovery."""
        reconnector = hub_of(session.connection).reconnector
        if reconnector is not None:
            reconnector.recoveries[session.session_id] = self

    def _stop_listening(self) -> None:
        """Stop folding the session's updates and watching its connection; the turns are left as they are."""
        if self._detach is not None:
            self._detach()
            self._detach = None
        if self._scope is not None:
            self._scope.cancel()
            self._scope = None

    def _unregister_recovery(self) -> None:
        session = self._session
        reconnector = hub_of(session.connection).reconnector if session is not None else None
        if session is not None and reconnector is not None and reconnector.recoveries.get(session.session_id) is self:
            del reconnector.recoveries[session.session_id]

    @property
    def mcp_servers(self) -> list[McpServerConfig]:
        """The MCP servers this session was given (opened or last resumed with); ``reconnect()`` and an automatic
        reconnect re-send them."""
        return list(self._mcp_servers)

    def _unfinished(self) -> list[ChatTurn]:
        turns = self._active + [s.owner for s in self._segments if s.owner is not None] + self._awaiting
        return list(dict.fromkeys(turns))

    def reconnect_event(self, event: ReconnectEvent) -> None:
        """``SessionRecovery``: tell the running turns; when the policy gave up, end them with its error."""
        if isinstance(event, Reconnecting):
            self._attempt = event.attempt
            if self._shown_at_drop is None:
                self._at_drop()
            for turn in self._unfinished():
                turn.report(ChatReconnecting(event.attempt, event.attempts, event.error))
        elif isinstance(event, ReconnectGaveUp):
            self._shown_at_drop = self._seen_at_drop = None
            self._closed = event.error
            self._fail_all(event.error)
            if self._streams is not None:
                self._streams.end(event.error)

    def _at_drop(self) -> None:
        """Record what the turns (``_shown``) and the streams (``Seen``) had been shown when the connection dropped:
        the replay is compared with it (kept over failed attempts: each compares with the drop)."""
        self._shown_at_drop = _shown(self.state.timeline)
        self._seen_at_drop = Seen.take(self.state)

    async def recover(self, connection: ClientConnection) -> None:
        """``SessionRecovery``: resume on the new transport, replay quietly, then settle the turns (see above)."""
        session = self._session
        assert session is not None
        session_id = session.session_id
        if self._shown_at_drop is None:
            self._at_drop()
        self._stop_listening()
        hub = hub_of(connection)
        quiet = BatchUpdateListener(self._fold_quietly, self._fold_run_quietly)
        track = hub.session_track(session_id)
        self.state.begin_resume(replay=True, drop_unreplayed=True)
        try:
            resumed, response = await open_resumed_session(
                hub,
                session_id,
                hub.session_cwds.get(session_id, "/"),
                "start",
                self._mcp_servers,
                self._additional_directories,
                listener=quiet,
            )
        except (ResourceNotFound, CapabilityNotSupported) as exc:
            self.state.apply_resume_response(ResumeSessionResponse())
            track.unlisten_fn(quiet)()
            lost = track.lost = SessionLost(session_id, exc)  # every later call on the session raises it too
            self._session_lost(lost, connection)
            raise lost from exc
        except BaseException:
            self.state.apply_resume_response(ResumeSessionResponse())  # nothing dropped: the next attempt replays
            track.unlisten_fn(quiet)()
            raise
        # The lists the answer carries reach the streams through the catch-up, only if they changed.
        self.state.apply_resume_response(response, drop_unreplayed=True)
        track.unlisten_fn(quiet)()
        resumed.add_update_listener(self._listener)  # in the same step: no live update is lost or seen twice
        self._bind(resumed)
        self._v1_cut = connection.protocol.version == 1 and not self.state.is_idle
        if self._v1_cut:
            # A v1 turn is its prompt request, which died with the old transport: nothing runs on the new one.
            # Its stop reason was only in that request's answer; the load's answer may say it again (an agent
            # that kept the session across connections), else it is unknown, never None.
            self.state.apply(StateUpdate(state="idle", stop_reason=_last_stop_reason(response)))
        self._catch_up_streams()
        self._settle_after_replay(session_id)

    def _catch_up_streams(self) -> None:
        """The open streams get what they missed while away (still in the barrier's step: before any live item)."""
        seen, self._seen_at_drop = self._seen_at_drop, None
        streams = self._streams
        if streams is None or seen is None:
            return
        events, forgotten = missed(seen, self.state)
        streams.caught_up(StreamReconnected(self._attempt, forgotten), events)

    def _fold_quietly(self, note: UpdateSessionNotification) -> None:
        if note.session_id == self.state.session_id:
            if getattr(self.state.apply(note.update), "created", False):
                self._trim()  # the history bound holds during a replay as it does live
        elif self.state.descendant(note.session_id) is not None:
            self.state.apply_descendant(note.session_id, note.update)

    def _fold_run_quietly(self, notes: list[UpdateSessionNotification]) -> None:
        for note in notes:
            self._fold_quietly(note)

    def _session_lost(self, lost: SessionLost, connection: ClientConnection) -> None:
        self._shown_at_drop = self._seen_at_drop = None
        reconnector = hub_of(connection).reconnector
        if reconnector is not None:
            reconnector.recoveries.pop(lost.session_id, None)
        for turn in self._unfinished():
            turn.report(ChatSessionLost(lost))
        self._closed = lost  # chat() raises it from now on (until reconnect() or resume finds the session)
        self._fail_all(lost)
        if self._streams is not None:
            self._streams.end(lost)  # nothing more will come: the agent has no such session

    def _settle_after_replay(self, session_id: str) -> None:
        shown, self._shown_at_drop = self._shown_at_drop or {}, None
        turns = self._unfinished()
        self._active, self._awaiting, self._segments, self._receiver = [], [], [], None
        timeline = list(self.state.timeline)
        ids = {i: e.message_id for i, e in enumerate(timeline) if type(e) is Message and e.role == "user"}
        users = {message_id: i for i, message_id in ids.items()}
        places = sorted(ids)
        claimed = {t.message_id for t in turns if t.message_id is not None}
        last = self._last_response.message_id if self._last_response is not None else None
        floor = max([users[m] for m in claimed | {last} if m in users], default=-1)
        # Prompts the agent inserted while we were away: its new user messages, in order, are theirs.
        spare = [ids[i] for i in places if i > floor and ids[i] not in claimed]
        idle = self.state.is_idle
        finished: list[tuple[ChatTurn, int]] = []
        for turn in turns:
            turn.report(ChatReconnected(self._attempt))
            message_id = turn.message_id
            if message_id is None and turn.state != "started" and spare:
                message_id = spare.pop(0)
            at = users.get(message_id) if message_id is not None else None
            if at is None:
                turn.fail(TurnLost(session_id, turn.response.text))
                continue
            if turn.state != "started":
                turn.start(message_id or "")
            end = next((i for i in places if i > at), len(timeline))
            turn.catch_up(timeline[at:end], shown)
            if idle:
                finished.append((turn, at))
            else:
                self._active.append(turn)
        state = self.state
        change = StateChanged("idle", "running", state.stop_reason, state.error, state.background, True)
        unknown = StateChanged("idle", "running", STOP_REASON_UNKNOWN, None, state.background, True)
        final = places[-1] if places else -1
        for turn, at in finished:  # ended while the connection was down: the agent's idle state says how
            # v1: the load's stop reason is the session's last turn's; a cut turn before that one: unknown.
            self._last_response = turn.finish(unknown if self._v1_cut and at != final else change)
        self._receiver = self._active[-1] if self._active else None
        self._update_idle()


def _last_stop_reason(response: ResumeSessionResponse) -> str:
    """The stop reason a v1 ``session/load`` answer gives for the session's last turn (``LAST_STOP_REASON_META``),
    else ``STOP_REASON_UNKNOWN``."""
    meta = response.meta
    reason = meta.get(LAST_STOP_REASON_META) if isinstance(meta, dict) else None
    return reason if isinstance(reason, str) and reason else STOP_REASON_UNKNOWN


def _shown(timeline: Any) -> dict[int, Any]:
    """What each entity showed at the drop: a message's text, a tool call's status (by ``id``)."""
    shown: dict[int, Any] = {}
    for entry in timeline:
        entity: TimelineEntry = entry
        if type(entity) is Message:
            shown[id(entity)] = entity.text
        elif type(entity) is ToolCall:
            shown[id(entity)] = entity.status
    return shown
