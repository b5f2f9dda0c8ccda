"""Closing and resuming sessions (v2): ``session/close`` (its answer, the closed session, a busy session's work
and held prompts) and ``session/resume`` (its answer, the state snapshot, no replay unless asked, the replay
before the answer, replayed message ids, unknown cursors)."""

from __future__ import annotations

from typing import Any

from acp_session.schema.types import (
    CloseSessionRequest,
    CloseSessionResponse,
    ReplayFromStart,
    ResumeSessionRequest,
    ResumeSessionResponse,
    UnknownReplayFrom,
)

from ...frames import Frame
from ...outcomes import NotApplicable
from ...registry import CheckContext, require
from ..common import HELLO, MESSAGE_KINDS, scenario_turn_start
from .base import V2, hello_turn, message_id, second_prompt, strict

__all__ = [
    "close",
    "close_active_work",
    "close_held_prompts",
    "closed_session",
    "resume",
    "resume_bad_cursor",
    "resume_message_ids",
    "resume_no_replay",
    "resume_replay",
    "resume_state_snapshot",
]


HISTORY_KINDS = MESSAGE_KINDS | {
    "user_message",
    "user_message_chunk",
    "tool_call_update",
    "tool_call_content_chunk",
    "plan_update",
    "terminal_update",
    "terminal_output_chunk",
}
RESUMING = "session-setup.mdx#resuming-sessions"


@V2(
    "close",
    "session/close of an idle session succeeds with an empty object",
    "close and resume",
    ("session-setup.mdx#closing-sessions", "schema:CloseSessionResponse"),
)
async def close(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid, _turn = await hello_turn(ctx)
    result = await p.call_ok(
        "session/close", CloseSessionRequest(session_id=sid), rule="session-setup.mdx#closing-sessions"
    )
    strict(result, CloseSessionResponse, "schema:CloseSessionResponse", "the session/close result")
    extra = sorted(k for k in result if k != "_meta")
    require(not extra, "schema:CloseSessionResponse", f"the session/close result should be empty, has {extra}")
    return None


@V2(
    "closed-session",
    "a closed session takes no prompt and gets nothing more; closing it again succeeds (or -32002)",
    "close and resume",
    ("ACP2-074", "schema:CloseSessionRequest"),
)
async def closed_session(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid, _turn = await hello_turn(ctx)
    closed = await p.call("session/close", CloseSessionRequest(session_id=sid), rule="schema:CloseSessionRequest")
    if closed.error is not None:
        raise NotApplicable(f"closing the session failed ({closed.error}): close's subject")
    again = await p.call("session/close", CloseSessionRequest(session_id=sid), rule="ACP2-074")
    if again.error_code not in (None, -32002):
        ctx.warn("ACP2-074", f"closing a closed session should succeed (or -32002), got {again.error}")
    start = p.mark
    rid = await p.prompt(sid, "after close")
    frame = await p.response(rid, start=start)
    require(frame is not None, "schema:CloseSessionRequest", "no response to a prompt for a closed session")
    assert frame is not None
    require(frame.error is not None, "schema:CloseSessionRequest", "a prompt for a closed session was accepted")
    if frame.error_code != -32002:
        ctx.note(f"a prompt for a closed session is answered {frame.error_code} (-32002 names a missing session)")
    await p.barrier()
    after = p.find(lambda f: f.session_id == sid and f.method is not None, closed.index)
    require(not after, "schema:CloseSessionRequest", f"{after[0].method if after else ''} sent after close")
    return None


@V2(
    "close-active-work",
    "closing a busy session cancels its work: the idle update with stopReason cancelled comes before the answer",
    "close and resume",
    ("ACP2-073", "ACP2-075"),
    scenarios=("long_turn",),
)
async def close_active_work(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    await scenario_turn_start(ctx, ctx.scenario("long_turn"), sid)
    close_at = p.mark
    response = await p.call("session/close", CloseSessionRequest(session_id=sid), rule="ACP2-073", timeout=ctx.wait)
    require(response.error is None, "ACP2-073", f"close failed: {response.message}")
    idle = p.find(p.is_state(sid, "idle"), close_at, response.index)
    require(
        bool(idle) and (idle[-1].update or {}).get("stopReason") == "cancelled",
        "ACP2-075",
        "no idle update with stopReason cancelled before the close response",
    )
    return None


@V2(
    "close-held-prompts",
    "closing a busy session answers its prompts as the rules say: messageId if inserted, -32800 if not",
    "close and resume",
    ("ACP2-076", "ACP2-077", "schema:CloseSessionRequest"),
    scenarios=("long_turn",),
)
async def close_held_prompts(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    start, first_id = await scenario_turn_start(ctx, ctx.scenario("long_turn"), sid)
    held_at, held_id = await second_prompt(ctx, sid)
    await p.barrier()
    response = await p.call("session/close", CloseSessionRequest(session_id=sid), rule="ACP2-076", timeout=ctx.wait)
    first = await p.response(first_id, ctx.wait, start)
    require(
        first is not None and message_id(first.result) is not None,
        "ACP2-077",
        "the inserted prompt must still be answered with its messageId",
    )
    held = await p.response(held_id, ctx.wait, held_at)
    require(held is not None, "ACP2-076", "the second prompt got no response after close")
    assert held is not None
    if held.error is None:  # it had been inserted (the agent does not hold prompts)
        require(message_id(held.result) is not None, "ACP2-077", "an inserted prompt answered without its messageId")
    else:
        require(held.error_code == -32800, "ACP2-076", f"a prompt not inserted must get -32800, got {held.error}")
    await p.barrier()
    after = p.find(lambda f: f.session_id == sid and f.method is not None, response.index + 1)
    require(not after, "schema:CloseSessionRequest", f"{after[0].method if after else ''} sent after close")
    return None


async def _resume(ctx: CheckContext, sid: str, replay: Any = None) -> tuple[Frame, list[Frame]]:
    """``session/resume`` of ``sid`` (with ``replay`` as replayFrom): its answer and the session's updates before."""
    p = ctx.probe
    at = p.mark
    request = ResumeSessionRequest(session_id=sid, cwd=ctx.cwd, **({"replay_from": replay} if replay else {}))
    answer = await p.call("session/resume", request, rule=RESUMING)
    require(answer.error is None, RESUMING, f"session/resume failed: {answer.error}")
    return answer, p.find(lambda f: f.session_id == sid and f.update is not None, at, answer.index)


@V2(
    "resume",
    "session/resume of an open session succeeds with a result in the schema's shape",
    "close and resume",
    (RESUMING, "schema:ResumeSessionResponse"),
)
async def resume(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid, _turn = await hello_turn(ctx)
    # The session stays open: whether a closed session can be resumed is the agent's choice.
    answer = await p.call("session/resume", ResumeSessionRequest(session_id=sid, cwd=ctx.cwd), rule=RESUMING)
    require(answer.error_code != -32601, RESUMING, "session/resume, part of the session baseline, is -32601")
    require(answer.error is None, RESUMING, f"resuming an open session failed: {answer.error}")
    strict(answer.result, ResumeSessionResponse, "schema:ResumeSessionResponse", "the session/resume result")
    return None


@V2(
    "resume-state-snapshot",
    "session/resume sends the current state after any replay and before its answer",
    "close and resume",
    ("ACP2-039", "ACP2-055"),
)
async def resume_state_snapshot(ctx: CheckContext) -> str | None:
    sid, _turn = await hello_turn(ctx)
    _answer, before = await _resume(ctx, sid)
    require(any(f.state() for f in before), "ACP2-039", "no state_update before the resume response")
    _answer, before = await _resume(ctx, sid, ReplayFromStart())
    states = [f for f in before if f.state()]
    history = [f for f in before if f.update_kind() in HISTORY_KINDS]
    require(
        bool(states) and (not history or states[-1].index > history[-1].index),
        "ACP2-055",
        "the current-state snapshot must come after the replay and before the response",
    )
    return None


@V2(
    "resume-no-replay",
    "session/resume without replayFrom replays no history",
    "close and resume",
    (RESUMING,),
)
async def resume_no_replay(ctx: CheckContext) -> str | None:
    sid, _turn = await hello_turn(ctx)
    _answer, before = await _resume(ctx, sid)
    replayed = [f for f in before if f.update_kind() in HISTORY_KINDS]
    require(not replayed, RESUMING, f"history replayed although replayFrom was omitted ({len(replayed)} updates)")
    p = ctx.probe
    at = p.mark
    await _resume(ctx, sid, ReplayFromStart())
    await p.barrier()  # before or after the answer (resume-replay's subject), what it replays
    if not p.find(lambda f: f.session_id == sid and f.update_kind() in HISTORY_KINDS, at):
        raise NotApplicable("the agent replays no history even when asked: none without replayFrom says nothing")
    return None


@V2(
    "resume-replay",
    "session/resume from the start replays history before its answer and nothing of it after",
    "close and resume",
    (RESUMING,),
)
async def resume_replay(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid, _turn = await hello_turn(ctx)
    answer, before = await _resume(ctx, sid, ReplayFromStart())
    await p.barrier()
    late = p.find(lambda f: f.session_id == sid and f.update_kind() in HISTORY_KINDS, answer.index + 1)
    require(not late, RESUMING, f"{late[0].update_kind() if late else ''} replayed after the session/resume response")
    replayed = [f for f in before if f.update_kind() in HISTORY_KINDS]
    if not replayed:
        raise NotApplicable("nothing was replayed: the agent retains no history (its choice)")
    return f"{len(replayed)} update(s) replayed"


@V2(
    "resume-message-ids",
    "a replayed user message keeps the messageId its prompt was answered with",
    "close and resume",
    (RESUMING, "schema:PromptResponse.messageId"),
)
async def resume_message_ids(ctx: CheckContext) -> str | None:
    sid, turn = await hello_turn(ctx)
    answered = message_id(turn.response.result)
    if answered is None:
        raise NotApplicable("the prompt response carries no messageId (prompt-accepted's subject)")
    p = ctx.probe
    at = p.mark
    await _resume(ctx, sid, ReplayFromStart())
    await p.barrier()  # before or after the answer (resume-replay's subject), what was replayed
    users = p.find(p.is_update(sid, "user_message", "user_message_chunk"), at)
    if not users:
        raise NotApplicable("no user message was replayed: the agent retains none (its choice)")
    ids = sorted({str((f.update or {}).get("messageId")) for f in users})
    require(
        ids == [answered], RESUMING, f"the replayed user message carries {ids}, the prompt was answered {answered!r}"
    )
    return None


@V2(
    "resume-bad-cursor",
    "session/resume with a replay cursor the agent does not support gets -32602",
    "close and resume",
    ("ACP2-070", "ACP2-072"),
)
async def resume_bad_cursor(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    await p.run_turn(sid, HELLO)
    bogus = await p.call(
        "session/resume",
        ResumeSessionRequest(
            session_id=sid, cwd=ctx.cwd, replay_from=UnknownReplayFrom({"type": "_acp_conformance_cursor"})
        ),
        rule="ACP2-070",
    )
    require(bogus.error_code == -32602, "ACP2-070", f"an unsupported replay cursor must get -32602: {bogus.message}")
    return None
