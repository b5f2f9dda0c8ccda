"""One registry of session update kinds (issue 19): the schema's kinds, what the connection tracks and what the
fold does all come from ``acp_session.update_kinds``."""

from __future__ import annotations

import typing

import msgspec

from acp_session.conversation import SessionState
from acp_session.conversation.state import _BY_TAG
from acp_session.schema import UpdateSessionNotification, types, unstable
from acp_session.session import TRACKED_UPDATES as SESSION_TRACKED
from acp_session.session import SessionTrack
from acp_session.update_kinds import KINDS, TRACKED_UPDATES, chunk_types, kind_of, register_subtype

# Unstable kinds with no fold rule yet: kept raw at their place in the timeline (UnknownEntry), like unknown ones.
KEPT_RAW: set[str] = set()


def _tag(tp: type) -> str:
    return str(tp.__struct_config__.tag)  # type: ignore[attr-defined]


def test_every_schema_update_type_has_a_kind_or_is_kept_raw_on_purpose() -> None:
    for module in (types, unstable):
        for tp in typing.get_args(module.SessionUpdate):
            assert kind_of(tp) is not None or _tag(tp) in KEPT_RAW, f"{module.__name__}.{tp.__name__} has no kind"
    assert not KEPT_RAW & {kind.tag for kind in KINDS}


def test_the_fold_and_the_tracking_read_the_same_table() -> None:
    assert set(_BY_TAG) == {kind.tag for kind in KINDS}
    assert SESSION_TRACKED is TRACKED_UPDATES
    assert {kind.tag for kind in KINDS if kind.tracked} == {
        "state_update",
        "tool_call_update",
        "terminal_update",
        "user_message",
        "user_message_chunk",
        "config_option_update",
        "subagent_update",
    }
    assert {tp: role for tp, role in chunk_types() if tp.__module__ == types.__name__} == {
        types.UserMessageChunk: "user",
        types.AgentMessageChunk: "agent",
        types.AgentThoughtChunk: "thought",
    }


def test_a_tracked_kind_changes_the_session_track_and_others_do_not() -> None:
    track = SessionTrack("s")
    track.apply(UpdateSessionNotification(session_id="s", update=types.StateUpdate(state="running")))
    assert track.state == "running"
    for kind in KINDS:
        for tp in kind.types:
            assert (tp in TRACKED_UPDATES) is kind.tracked, tp


class _MyChunk(types.AgentMessageChunk, kw_only=True, tag="agent_message_chunk"):
    message_id: str = ""


def test_a_registered_subtype_folds_and_streams_as_its_model_type() -> None:
    register_subtype(_MyChunk, types.AgentMessageChunk)
    assert kind_of(_MyChunk) is kind_of(types.AgentMessageChunk)
    assert (_MyChunk, "agent") in chunk_types()
    state = SessionState("s")
    block = types.TextContent(text="hi")
    state.apply(_MyChunk(message_id="m", content=block))
    assert state.chunk_targets() is not None and _MyChunk in state.chunk_targets()  # type: ignore[operator]
    message = state.message("m")
    assert message is not None and message.text == "hi"
    model = SessionState("s")
    model.apply(types.AgentMessageChunk(message_id="m", content=block))
    assert msgspec.to_builtins(model.timeline) == msgspec.to_builtins(state.timeline)
