"""session/new, session/resume and session/set_config_option responses folded with updates."""

from __future__ import annotations

from typing import Any

from acp_session import codec
from acp_session.conversation import ConfigOptionsChanged, SessionState
from acp_session.schema import NewSessionResponse, ResumeSessionResponse, SetSessionConfigOptionResponse

from .wire import fold, state, update

OPTION_A = {"type": "boolean", "configId": "a", "name": "A", "currentValue": True}
OPTION_B = {"type": "boolean", "configId": "b", "name": "B", "currentValue": False}
COMMAND = {"type": "command", "name": "web", "description": "Search"}


def new_response(**fields: Any) -> NewSessionResponse:
    return codec.convert({"sessionId": "sess_1", **fields}, NewSessionResponse)


def resume_response(**fields: Any) -> ResumeSessionResponse:
    return codec.convert(fields, ResumeSessionResponse)


def config_ids(session: SessionState) -> list[str]:
    return [option.config_id for option in session.config_options]  # type: ignore[union-attr]


def test_new_session_response_sets_id_and_initial_lists() -> None:
    session = SessionState()
    events = session.apply_new_session_response(new_response(configOptions=[OPTION_A], availableCommands=[COMMAND]))
    assert session.session_id == "sess_1" and config_ids(session) == ["a"]
    assert [command.name for command in session.available_commands] == ["web"]  # type: ignore[union-attr]
    assert len(events) == 2 and session.state == "idle"


def test_acp2_031_new_session_response_keeps_already_reported_state() -> None:
    """ACP2-031: a state_update that arrived before the session/new response is not overwritten."""
    session = fold([state("running")])
    session.apply_new_session_response(new_response())
    assert session.state == "running" and not session.is_idle
    session = fold([state("requires_action", background=[])])
    session.apply_new_session_response(new_response(configOptions=[OPTION_A]))
    assert session.state == "requires_action" and session.background == []


def test_acp2_031_response_lists_do_not_overwrite_earlier_updates() -> None:
    """ACP2-031: lists reported by updates that beat the response stay; the response's are older."""
    session = fold(
        [
            update({"sessionUpdate": "config_option_update", "configOptions": [OPTION_B]}),
            update({"sessionUpdate": "available_commands_update", "availableCommands": []}),
        ]
    )
    events = session.apply_new_session_response(new_response(configOptions=[OPTION_A], availableCommands=[COMMAND]))
    assert events == [] and config_ids(session) == ["b"] and session.available_commands == []


def test_acp2_032_null_lists_are_treated_as_omitted() -> None:
    """ACP2-032: a sender's null configOptions / availableCommands is read as omission."""
    session = fold([update({"sessionUpdate": "config_option_update", "configOptions": [OPTION_A]})])
    session.apply_resume_response(resume_response(configOptions=None, availableCommands=None))
    assert config_ids(session) == ["a"]
    fresh = SessionState()
    assert fresh.apply_new_session_response(new_response(configOptions=None)) == []
    assert fresh.config_options == []


def test_acp2_055_resume_response_alone_does_not_imply_idle() -> None:
    """ACP2-055: the state comes from the resume snapshot; the response changes none of it."""
    session = fold([state("running")])
    session.begin_resume(replay=False)
    session.apply_resume_response(resume_response())
    assert session.state == "running" and not session.resuming


def test_acp2_055_resume_snapshot_sets_state_without_completing() -> None:
    """ACP2-055 / ACP2-045: the current-state snapshot sent during resume is not a new completion."""
    session = fold([state("running")])
    session.begin_resume(replay=False)
    event = session.apply(state("idle", stopReason="end_turn"))
    session.apply_resume_response(resume_response())
    assert session.is_idle and session.stop_reason == "end_turn" and session.completions == 0
    assert not event.completed  # type: ignore[attr-defined]
    session.apply(state("running"))
    session.apply(state("idle", stopReason="end_turn"))
    assert session.completions == 1


def test_resume_response_lists_apply_unless_updated_during_resume() -> None:
    session = fold([update({"sessionUpdate": "config_option_update", "configOptions": [OPTION_B]})])
    session.begin_resume(replay=False)
    session.apply_resume_response(resume_response(configOptions=[OPTION_A]))
    assert config_ids(session) == ["a"]  # older updates are from before the resume
    session.begin_resume(replay=False)
    session.apply(update({"sessionUpdate": "config_option_update", "configOptions": [OPTION_B]}))
    session.apply_resume_response(resume_response(configOptions=[OPTION_A]))
    assert config_ids(session) == ["b"]


def test_set_config_option_response_replaces_options() -> None:
    session = fold([update({"sessionUpdate": "config_option_update", "configOptions": [OPTION_A, OPTION_B]})])
    response = codec.convert({"configOptions": [OPTION_B]}, SetSessionConfigOptionResponse)
    event = session.apply_set_config_option_response(response)
    assert isinstance(event, ConfigOptionsChanged) and config_ids(session) == ["b"]


def test_separate_messages_are_joined_with_a_blank_line_unless_the_seam_has_whitespace() -> None:
    """Issue 16 (4): ``ChatResponse.text`` used to run separate messages together ("…done.42.I changed…")."""
    from acp_session.conversation.content import join_messages

    assert join_messages(["The tests are done.", "42.", "I changed one line."]) == (
        "The tests are done.\n\n42.\n\nI changed one line."
    )
    assert join_messages(["I'll help.", " Now I understand."]) == "I'll help. Now I understand."
    assert join_messages(["line\n", "next", "", "last"]) == "line\nnext\n\nlast"
    assert join_messages([]) == ""
