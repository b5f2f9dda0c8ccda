"""Loading, resuming and closing sessions (v1), each when advertised."""

from __future__ import annotations

import re

import msgspec

from acp_session.codec import decoder
from acp_session.schema import v1

from ...frames import Frame
from ...outcomes import Fail, NotApplicable
from ...registry import CheckContext, require
from ..common import scenario_turn_start, texts
from .base import V1, response_or_fail, stop_reason_of

__all__ = ["session_close", "session_load", "session_resume"]


def _joined(frames: list[Frame], kind: str) -> str:
    return re.sub(r"\s+", " ", "".join(texts(f.update or {}) for f in frames if f.update_kind() == kind)).strip()


@V1(
    "session-load",
    "session/load (when advertised) replays the whole conversation before answering",
    "close and resume",
    ("session-setup.mdx#loading-sessions", "schema:LoadSessionResponse"),
)
async def session_load(ctx: CheckContext) -> str | None:
    p = ctx.probe
    if (p.capabilities.get("loadSession")) is not True:
        raise NotApplicable("loadSession is not advertised")
    rule = "session-setup.mdx#loading-sessions"
    sid = await p.new_session(ctx.cwd)
    text = "Please remember this message."
    turn = await p.run_turn(sid, text)
    live = p.find(p.is_update(sid), turn.start, turn.response.index)
    at = p.mark
    request = v1.LoadSessionRequest(session_id=sid, cwd=ctx.cwd, mcp_servers=[])
    loaded = await p.call("session/load", request, rule=rule)
    if loaded.error is not None:
        # v1 says nothing about loading a session that is still open on the same connection.
        raise NotApplicable(f"loading a session open on this connection was refused ({loaded.error}); not judged")
    try:
        decoder(v1.LoadSessionResponse)(msgspec.json.encode(loaded.result if loaded.result is not None else {}))
    except msgspec.ValidationError as exc:
        raise Fail("schema:LoadSessionResponse", f"session/load result does not match the v1 schema: {exc}") from None
    replayed = p.find(p.is_update(sid), at, loaded.index)
    require(text in _joined(replayed, "user_message_chunk"), rule, "the replay does not include the user's prompt")
    agent_live = _joined(live, "agent_message_chunk")
    require(
        agent_live in _joined(replayed, "agent_message_chunk"),
        rule,
        f"the replay does not include the agent's reply {agent_live[:60]!r}",
    )
    await p.barrier()
    late = [f for f in p.find(p.is_update(sid), loaded.index) if f.update_kind() in ("user_message_chunk",)]
    require(not late, rule, "conversation updates replayed after the session/load response")
    return f"{len(replayed)} updates replayed"


@V1(
    "session-resume",
    "session/resume (when advertised) does not replay history",
    "close and resume",
    ("session-setup.mdx#resuming-sessions", "schema:ResumeSessionResponse"),
)
async def session_resume(ctx: CheckContext) -> str | None:
    p = ctx.probe
    if p.session_capability("resume") is None:
        raise NotApplicable("sessionCapabilities.resume is not advertised")
    rule = "session-setup.mdx#resuming-sessions"
    sid = await p.new_session(ctx.cwd)
    await p.run_turn(sid, "Please remember this message.")
    at = p.mark
    resumed = await p.call("session/resume", {"sessionId": sid, "cwd": ctx.cwd, "mcpServers": []}, rule=rule)
    if resumed.error is not None:
        raise NotApplicable(f"resuming a session open on this connection was refused ({resumed.error}); not judged")
    replayed = [
        f
        for f in p.find(p.is_update(sid), at, resumed.index)
        if f.update_kind() in ("user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call")
    ]
    require(not replayed, rule, f"{len(replayed)} history updates replayed before the resume response")
    return None


@V1(
    "session-close",
    "session/close (when advertised) succeeds; closing a busy session cancels its turn",
    "close and resume",
    ("session-setup.mdx#closing-active-sessions", "ACP1-017"),
    optional_scenarios=("long_turn",),
)
async def session_close(ctx: CheckContext) -> str | None:
    p = ctx.probe
    if p.session_capability("close") is None:
        raise NotApplicable("sessionCapabilities.close is not advertised")
    rule = "session-setup.mdx#closing-active-sessions"
    sid = await p.new_session(ctx.cwd)
    closed = await p.call("session/close", {"sessionId": sid}, rule=rule)
    require(closed.error is None, rule, f"closing an idle session failed: {closed.error}")
    scenario = ctx.optional_scenario("long_turn")
    if scenario is None:
        return "closing a busy session not checked: no long_turn scenario"
    busy = await p.new_session(ctx.cwd)
    start, rid = await scenario_turn_start(ctx, scenario, busy)
    closed = await p.call("session/close", {"sessionId": busy}, rule=rule)
    require(closed.error is None, rule, f"closing a busy session failed: {closed.error}")
    answer = await response_or_fail(p, rid, start, ctx.wait, rule, "the prompt of the closed session")
    require(
        answer.error is None, rule, f"the closed session's prompt failed instead of ending cancelled: {answer.error}"
    )
    reason = stop_reason_of(answer)
    require(
        reason == "cancelled", "ACP1-017", f"close cancels work as session/cancel does, but stopReason is {reason!r}"
    )
    return None
