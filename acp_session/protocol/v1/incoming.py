"""What a version 1 agent sends the client, mapped to the model (a base class of ``V1Protocol``, kept apart for
size): ``session/update`` notifications (one at a time or a run of them; chunks get their message ids, v1 kinds
become model kinds, kinds only version 2 has are counted and ignored), permission and elicitation requests, and
``fs/write_text_file`` (told to the session's listeners once written).

``V1Protocol.__init__`` sets every attribute used here; the annotations name them for the type checker.
"""

from __future__ import annotations

import logging
from typing import Any

import msgspec
from msgspec import UNSET

from ...codec import convert, to_builtins
from ...rpc import Connection
from ...schema import types as m
from ...schema import unstable as mu
from ...schema.v1 import types as v1
from ..base import ClientSide
from ..usage_quirk import SkippedUsage
from . import convert as cv
from .chunks import MODEL_CONTENT_CHUNKS, ChunkNotification
from .sessions import V1Session

_log = logging.getLogger("acp_session.protocol")

__all__ = ["MAX_UNOPENED_SESSIONS", "V1Incoming"]

MAX_UNOPENED_SESSIONS = 64
"""Session ids seen only in updates for which the adapter keeps message-id bookkeeping (the newest); the
client keeps fewer of their updates anyway (``Limits.early_sessions``). Sessions the client opened are not counted."""

# v1 chunk type (generated, or derived with model content: chunks.py) ->
# (model chunk type, role used in synthesised message ids, the generated v1 type, content already a model block)
_CHUNKS: dict[type, tuple[type, str, type, bool]] = {
    v1.AgentMessageChunk: (m.AgentMessageChunk, "agent", v1.AgentMessageChunk, False),
    v1.AgentThoughtChunk: (m.AgentThoughtChunk, "thought", v1.AgentThoughtChunk, False),
    v1.UserMessageChunk: (m.UserMessageChunk, "user", v1.UserMessageChunk, False),
}
for _derived, _generated in MODEL_CONTENT_CHUNKS.items():
    _CHUNKS[_derived] = (*_CHUNKS[_generated][:3], True)
# Updates that do not end the message being streamed (they are not part of the timeline).
_NEUTRAL: frozenset[type] = frozenset(
    {v1.UsageUpdate, v1.AvailableCommandsUpdate, v1.SessionInfoUpdate, v1.ConfigOptionUpdate, v1.CurrentModeUpdate}
)


class V1Incoming:
    """The agent-to-client half of ``V1Protocol``."""

    ignored_updates: int
    rpc: Connection
    _client: ClientSide | None
    _sessions: dict[str, V1Session]
    _unopened: dict[str, V1Session]

    def _record_for_update(self, session_id: str) -> V1Session:
        """The record an update's session id names. An id the client never opened gets one of a bounded set,
        the oldest of which goes first: an agent inventing ids can neither grow memory nor push out the
        record of a session the client opened."""
        state = self._sessions.get(session_id) or self._unopened.get(session_id)
        if state is None:
            state = self._unopened[session_id] = V1Session(session_id)
            if len(self._unopened) > MAX_UNOPENED_SESSIONS:
                del self._unopened[next(iter(self._unopened))]
        return state

    # -- outgoing --------------------------------------------------------------------------------------------

    def _to_model(self, note: v1.SessionNotification) -> m.UpdateSessionNotification | None:
        update = note.update
        kind = type(update)
        state = self._sessions.get(note.session_id) or self._record_for_update(note.session_id)
        chunk = _CHUNKS.get(kind)
        if chunk is not None:
            model_kind, role, run_kind, model_content = chunk
            given = update.message_id  # type: ignore[union-attr]
            message_id = given if isinstance(given, str) and given else state.chunk_message_id(run_kind, role)
            if type(note) is ChunkNotification:
                update.message_id = message_id  # type: ignore[union-attr]  # a model chunk subtype: complete now
                return note  # type: ignore[return-value]
            content = update.content  # type: ignore[union-attr]
            block: Any = content if model_content else cv.content_block(content)
            return m.UpdateSessionNotification(
                session_id=note.session_id,
                update=model_kind(message_id=message_id, content=block, meta=update.meta),  # type: ignore[union-attr]
                meta=note.meta,
            )
        if kind is v1.UnknownSessionUpdate and self._v2_only(note):
            return None
        if kind not in _NEUTRAL:
            state.end_message()
        try:
            if kind is v1.CurrentModeUpdate:
                state.set_current_mode(update.current_mode_id)  # type: ignore[union-attr]
                model: Any = m.ConfigOptionUpdate(config_options=state.options())
            else:
                plain = cv.update_plain(to_builtins(update), state.plan_id)
                if plain is None:
                    return None
                model = convert(plain, mu.SessionUpdate)  # the superset: subagent and session messages typed
                if type(model) is m.ConfigOptionUpdate:
                    state.agent_options = list(model.config_options)
                    model = m.ConfigOptionUpdate(config_options=state.options(), meta=model.meta)
        except msgspec.ValidationError as exc:
            self.rpc.peer_log.warning(
                "v1 updates without a model form",
                "v1 session/update dropped, it has no model form: %s",
                exc,
                logger=_log,
            )
            return None
        return m.UpdateSessionNotification(session_id=note.session_id, update=model, meta=note.meta)

    def _v2_only(self, note: v1.SessionNotification) -> bool:
        """Whether ``note`` is an update only v2 has (``state_update``, ``user_message``, ...): ignored, as if it
        had not come (it neither ends the message being streamed nor reaches the fold), with a warning the
        first time each kind comes on this connection; ``ignored_updates`` counts them all."""
        tag = cv.v2_only_kind(note.update)
        if tag is None:
            return False
        self.ignored_updates += 1
        log = self.rpc.peer_log  # a tag of the model's (V2_ONLY_UPDATES): the kinds stay few
        log.warning(
            f"v2-only updates {tag!r}", "a v1 agent sent the v2-only session/update %r; ignored", tag, logger=_log
        )
        return True

    def _on_update(self, note: v1.SessionNotification | SkippedUsage) -> Any:
        if isinstance(note, SkippedUsage):  # a usage update without its counts (usage_quirk.py)
            note.report(self.rpc.peer_log)
            return None
        model = self._to_model(note)
        if model is None or self._client is None:
            return None
        return self._client.receive_update(model)

    def _on_updates(self, notes: list[v1.SessionNotification]) -> Any:
        """``_on_update`` for a run of updates one read brought in: the hot path of a streamed v1 turn.

        A stretch of chunks of one kind and session (without an id or ``_meta`` of their own) belongs to one
        message: after its first chunk (whose content chunks.py already decoded into a model block), the rest
        are built directly, without the lookups ``_to_model`` makes for each update.
        """
        models: list[m.UpdateSessionNotification] = []
        append = models.append
        to_model = self._to_model
        stretch_kind: Any = None  # the v1 chunk type of the current stretch, if any
        stretch_session = stretch_id = ""
        for note in notes:
            update: Any = note.update
            if (
                type(update) is stretch_kind
                and note.session_id == stretch_session
                and not update.message_id
                and update.meta is UNSET
                and note.meta is UNSET
            ):
                # Only model chunk subtypes start a stretch, so the note is a ChunkNotification and its update
                # becomes a complete model chunk once it has the message id: nothing is built per chunk.
                update.message_id = stretch_id
                append(note)  # type: ignore[arg-type]
                continue
            chunk = _CHUNKS.get(type(update))
            own_id = chunk is not None and bool(update.message_id)
            model = to_model(note)
            if model is None:
                stretch_kind = None
                continue
            append(model)
            if chunk is not None and chunk[3] and not own_id:  # a subtype chunk: later ones join its message
                stretch_kind, stretch_session = type(update), note.session_id
                stretch_id = model.update.message_id  # type: ignore[union-attr]
            else:
                stretch_kind = None
        if not models or self._client is None:
            return None
        return self._client.receive_updates(models)

    async def _on_permission(self, request: v1.RequestPermissionRequest) -> Any:
        assert self._client is not None
        answer = await self._client.decide_permission(cv.permission_request(request))
        return cv.permission_response_to_v1(answer)

    async def _on_elicitation(self, request: Any) -> Any:
        assert self._client is not None
        model = convert(to_builtins(request), m.CreateElicitationRequest)
        return to_builtins(await self._client.decide_elicitation(model))

    async def _write_text_file(self, request: v1.WriteTextFileRequest) -> v1.WriteTextFileResponse:
        """The provider's ``write_text_file`` (built-in or the embedder's), then, only once it returned, the
        session's file listeners (``SessionTrack.wrote_file``: a ``Conversation`` reports a ``ChatFile``) before
        the agent gets its answer. A failing listener is logged; the write succeeded and the agent is told so."""
        client = self._client
        assert client is not None and client.file_system is not None  # the route exists only with a provider
        response = await client.file_system.write_text_file(request)
        try:
            client.file_written(request.session_id, request.path, request.content)
        except Exception:
            _log.exception("a file-written listener failed for %s", request.path)
        return response

    # -- sessions for the providers ------------------------------------------------------------------------
