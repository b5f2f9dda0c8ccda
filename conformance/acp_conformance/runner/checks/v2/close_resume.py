"""Closing and resuming sessions (v2): ``session/close``, of an idle and of a busy session, and ``session/resume``."""

from __future__ import annotations

from acp_session.schema.types import CloseSessionRequest, ReplayFromStart, ResumeSessionRequest, UnknownReplayFrom

from ...registry import CheckContext, require
from ..common import HELLO, MESSAGE_KINDS, scenario_turn_start
from .base import V2, second_prompt

__all__ = ["close", "close_active_work", "resume"]


HISTORY_KINDS = MESSAGE_KINDS | {
    "user_message",
    "user_message_chunk",
    "tool_call_update",
    "tool_call_content_chunk",
    "plan_update",
    "terminal_update",
    "terminal_output_chunk",
}


@V2(
    "close",
    "session/close succeeds, closing again succeeds (or -32002), and nothing more comes for the closed session",
    "close and resume",
    ("session-setup.mdx#closing-sessions", "ACP2-074", "schema:CloseSessionRequest"),
)
async def close(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    await p.run_turn(sid, HELLO)
    closed = await p.call(
        "session/close", CloseSessionRequest(session_id=sid), rule="session-setup.mdx#closing-sessions"
    )
    require(
        closed.error is None, "session-setup.mdx#closing-sessions", f"closing an open session failed: {closed.error}"
    )
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
    "closing a busy session cancels its work before answering; its prompts are answered as the rules say",
    "close and resume",
    ("ACP2-073", "ACP2-075", "ACP2-076", "ACP2-077", "schema:CloseSessionRequest"),
    scenarios=("long_turn",),
)
async def close_active_work(ctx: CheckContext) -> str | None:
    p = ctx.probe
    scenario = ctx.scenario("long_turn")
    sid = await p.new_session(ctx.cwd)
    start, first_id = await scenario_turn_start(ctx, scenario, sid)
    held_at, held_id = await second_prompt(ctx, sid)
    await p.barrier()
    close_at = p.mark
    response = await p.call("session/close", CloseSessionRequest(session_id=sid), rule="ACP2-073", timeout=ctx.wait)
    require(response.error is None, "ACP2-073", f"close failed: {response.message}")
    idle = p.find(p.is_state(sid, "idle"), close_at, response.index)
    require(
        bool(idle) and (idle[-1].update or {}).get("stopReason") == "cancelled",
        "ACP2-075",
        "no idle update with stopReason cancelled before the close response",
    )
    first = await p.response(first_id, ctx.wait, start)
    message_id = first.result.get("messageId") if first is not None and isinstance(first.result, dict) else None
    require(isinstance(message_id, str), "ACP2-077", "the inserted prompt must still be answered with its messageId")
    held = await p.response(held_id, ctx.wait, held_at)
    require(held is not None, "ACP2-076", "the second prompt got no response after close")
    assert held is not None
    if held.error is None:  # it had been inserted (the agent does not hold prompts)
        held_message = held.result.get("messageId") if isinstance(held.result, dict) else None
        require(isinstance(held_message, str), "ACP2-077", "an inserted prompt answered without its messageId")
    else:
        require(held.error_code == -32800, "ACP2-076", f"a prompt not inserted must get -32800, got {held.error}")
    await p.barrier()
    after = p.find(lambda f: f.session_id == sid and f.method is not None, response.index)
    require(not after, "schema:CloseSessionRequest", f"{after[0].method if after else ''} sent after close")
    return None


@V2(
    "resume",
    "session/resume of an open session: no replay unless asked, the state snapshot before the answer, "
    "replayed messages keep their ids, unknown cursors get -32602",
    "close and resume",
    ("ACP2-039", "ACP2-055", "ACP2-070", "ACP2-072", "session-setup.mdx#resuming-sessions"),
)
async def resume(ctx: CheckContext) -> str | None:
    p = ctx.probe
    rule = "session-setup.mdx#resuming-sessions"
    sid = await p.new_session(ctx.cwd)
    turn = await p.run_turn(sid, "Please remember this message.")
    live = p.find(p.is_update(sid, "user_message", "user_message_chunk"), turn.start)
    live_ids = {(f.update or {}).get("messageId") for f in live}
    # The session stays open: whether a closed session can be resumed is the agent's choice.
    at = p.mark
    plain = await p.call("session/resume", ResumeSessionRequest(session_id=sid, cwd=ctx.cwd), rule="ACP2-039")
    require(plain.error is None, rule, f"resuming an open session failed: {plain.error}")
    before = p.find(lambda f: f.session_id == sid and f.update is not None, at, plain.index)
    require(any(f.state() for f in before), "ACP2-039", "no state_update before the resume response")
    replayed = [f for f in before if f.update_kind() in HISTORY_KINDS]
    require(not replayed, rule, "history replayed although replayFrom was omitted")

    at = p.mark
    full = await p.call(
        "session/resume",
        ResumeSessionRequest(session_id=sid, cwd=ctx.cwd, replay_from=ReplayFromStart()),
        rule="ACP2-039",
    )
    require(full.error is None, rule, f"resume with replay from the start failed: {full.error}")
    before = p.find(lambda f: f.session_id == sid and f.update is not None, at, full.index)
    users = [f for f in before if f.update_kind() in ("user_message", "user_message_chunk")]
    strange = {(f.update or {}).get("messageId") for f in users} - live_ids
    require(
        not strange, rule, f"replayed user messages with ids the live session never used: {sorted(map(str, strange))}"
    )
    if not users:
        ctx.note("nothing was replayed: the agent retains no history (its choice)")
    states = [f for f in before if f.state()]
    history = [f for f in before if f.update_kind() in HISTORY_KINDS]
    require(
        bool(states) and (not history or states[-1].index > history[-1].index),
        "ACP2-055",
        "the current-state snapshot must come after the replay and before the response",
    )
    bogus = await p.call(
        "session/resume",
        ResumeSessionRequest(
            session_id=sid, cwd=ctx.cwd, replay_from=UnknownReplayFrom({"type": "_acp_conformance_cursor"})
        ),
        rule="ACP2-070",
    )
    require(bogus.error_code == -32602, "ACP2-070", f"an unsupported replay cursor must get -32602: {bogus.message}")
    return f"{len(users)} user message update(s) replayed"
