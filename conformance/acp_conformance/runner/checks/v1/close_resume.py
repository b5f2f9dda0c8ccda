"""Loading, resuming and closing sessions (v1), each when advertised; each observation its own check (the load's
answer, its replay, the replay's order, the answer's shape; the resume's answer and its lack of replay; closing
an idle session and a busy one)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from acp_session.schema import v1

from ...frames import Frame
from ...outcomes import Fail, NotApplicable
from ...registry import CheckContext, require
from ..common import scenario_turn_start, texts
from .base import V1, response_or_fail, schema_problem, stop_reason_of

__all__ = [
    "close_busy",
    "load_replay",
    "load_replay_first",
    "load_result_object",
    "resume_no_replay",
    "session_close",
    "session_load",
    "session_resume",
]

LOAD = "session-setup.mdx#loading-sessions"
RESUME = "session-setup.mdx#resuming-sessions"
CLOSE = "session-setup.mdx#closing-active-sessions"
REMEMBER = "Please remember this message."
HISTORY_KINDS = frozenset(
    {"user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan"}
)


def _joined(frames: list[Frame], kind: str) -> str:
    return re.sub(r"\s+", " ", "".join(texts(f.update or {}) for f in frames if f.update_kind() == kind)).strip()


@dataclass
class Loaded:
    sid: str
    live: list[Frame]  # the turn's updates, before the load
    at: int  # the frame index where the load started
    answer: Frame  # the session/load response


async def _load(ctx: CheckContext) -> Loaded:
    """A session with one turn, loaded again on the same connection (n/a when not advertised or refused)."""
    p = ctx.probe
    if p.capabilities.get("loadSession") is not True:
        raise NotApplicable("loadSession is not advertised")
    sid = await p.new_session(ctx.cwd)
    turn = await p.run_turn(sid, REMEMBER)
    live = p.find(p.is_update(sid), turn.start, turn.response.index)
    at = p.mark
    answer = await p.call("session/load", v1.LoadSessionRequest(session_id=sid, cwd=ctx.cwd, mcp_servers=[]), rule=LOAD)
    if answer.error is not None:
        # v1 says nothing about loading a session that is still open on the same connection.
        raise NotApplicable(f"loading a session open on this connection was refused ({answer.error}); not judged")
    return Loaded(sid, live, at, answer)


@V1(
    "session-load",
    "session/load of a known session (when advertised) succeeds with a result in the v1 schema's shape",
    "close and resume",
    (LOAD, "schema:LoadSessionResponse"),
)
async def session_load(ctx: CheckContext) -> str | None:
    loaded = await _load(ctx)
    problem = schema_problem(v1.LoadSessionResponse, loaded.answer.result)
    if problem is not None:
        raise Fail("schema:LoadSessionResponse", f"session/load result does not match the v1 schema: {problem}")
    return None


@V1(
    "load-replay",
    "session/load (when advertised) replays the whole conversation, the user's prompt and the agent's reply",
    "close and resume",
    (LOAD,),
)
async def load_replay(ctx: CheckContext) -> str | None:
    p = ctx.probe
    loaded = await _load(ctx)
    replayed = p.find(p.is_update(loaded.sid), loaded.at, loaded.answer.index)
    require(REMEMBER in _joined(replayed, "user_message_chunk"), LOAD, "the replay does not include the user's prompt")
    agent_live = _joined(loaded.live, "agent_message_chunk")
    require(
        agent_live in _joined(replayed, "agent_message_chunk"),
        LOAD,
        f"the replay does not include the agent's reply {agent_live[:60]!r}",
    )
    return f"{len(replayed)} updates replayed"


@V1(
    "load-replay-first",
    "session/load's replay (when advertised) arrives before its answer, none of it after",
    "close and resume",
    (LOAD,),
)
async def load_replay_first(ctx: CheckContext) -> str | None:
    p = ctx.probe
    loaded = await _load(ctx)
    await p.barrier()
    history = p.is_update(loaded.sid, *HISTORY_KINDS)
    before = p.find(history, loaded.at, loaded.answer.index)
    late = p.find(history, loaded.answer.index)
    if not before and not late:
        raise NotApplicable("nothing was replayed, so there is no replay to put in order (load-replay judges that)")
    require(
        not late,
        LOAD,
        f"{len(late)} replayed update(s) ({late[0].update_kind() if late else ''}) after the session/load answer",
    )
    return f"{len(before)} updates replayed before the answer"


@V1(
    "load-result-object",
    "session/load (when advertised) answers an object ({}), not null",
    "close and resume",
    ("schema:LoadSessionResponse",),
)
async def load_result_object(ctx: CheckContext) -> str | None:
    loaded = await _load(ctx)
    result = loaded.answer.result
    require(
        isinstance(result, dict),
        "schema:LoadSessionResponse",
        f"session/load answered {result!r}; its result is an object ({{}} when empty)",
    )
    return None


def _resume_capability(ctx: CheckContext) -> None:
    if ctx.probe.session_capability("resume") is None:
        raise NotApplicable("sessionCapabilities.resume is not advertised")


@V1(
    "session-resume",
    "session/resume with sessionId and cwd only (when advertised) succeeds in the v1 schema's shape",
    "close and resume",
    (RESUME, "schema:ResumeSessionRequest", "schema:ResumeSessionResponse"),
)
async def session_resume(ctx: CheckContext) -> str | None:
    _resume_capability(ctx)
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    await p.run_turn(sid, REMEMBER)
    resumed = await p.call("session/resume", {"sessionId": sid, "cwd": ctx.cwd}, rule=RESUME)
    if resumed.error is not None:
        again = await p.call("session/resume", {"sessionId": sid, "cwd": ctx.cwd, "mcpServers": []}, rule=RESUME)
        require(
            again.error is not None,
            "schema:ResumeSessionRequest",
            f"session/resume without mcpServers (an optional field) failed ({resumed.error}), with it it succeeds",
        )
        raise NotApplicable(f"resuming a session open on this connection was refused ({resumed.error}); not judged")
    problem = schema_problem(v1.ResumeSessionResponse, resumed.result)
    require(problem is None, "schema:ResumeSessionResponse", f"session/resume result does not match: {problem}")
    return None


@V1(
    "resume-no-replay",
    "session/resume (when advertised) does not replay the conversation before answering",
    "close and resume",
    (RESUME,),
)
async def resume_no_replay(ctx: CheckContext) -> str | None:
    _resume_capability(ctx)
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    await p.run_turn(sid, REMEMBER)
    at = p.mark
    resumed = await p.call("session/resume", {"sessionId": sid, "cwd": ctx.cwd, "mcpServers": []}, rule=RESUME)
    if resumed.error is not None:
        raise NotApplicable(f"resuming a session open on this connection was refused ({resumed.error}); not judged")
    kinds = ("user_message_chunk", "agent_message_chunk", "agent_thought_chunk")
    replayed = p.find(p.is_update(sid, *kinds), at, resumed.index)
    require(not replayed, RESUME, f"{len(replayed)} history updates replayed before the resume response")
    return None


def _close_capability(ctx: CheckContext) -> None:
    if ctx.probe.session_capability("close") is None:
        raise NotApplicable("sessionCapabilities.close is not advertised")


@V1(
    "session-close",
    "session/close of an idle session (when advertised) succeeds with an empty result",
    "close and resume",
    (CLOSE, "schema:CloseSessionResponse"),
    prompts=False,
)
async def session_close(ctx: CheckContext) -> str | None:
    _close_capability(ctx)
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    closed = await p.call("session/close", {"sessionId": sid}, rule=CLOSE)
    require(closed.error is None, CLOSE, f"closing an idle session failed: {closed.error}")
    problem = schema_problem(v1.CloseSessionResponse, closed.result)
    require(problem is None, "schema:CloseSessionResponse", f"session/close result does not match: {problem}")
    return None


@V1(
    "close-busy",
    "session/close of a session with a running turn (when advertised) ends the turn with stopReason cancelled",
    "close and resume",
    (CLOSE, "ACP1-017"),
    scenarios=("long_turn",),
)
async def close_busy(ctx: CheckContext) -> str | None:
    _close_capability(ctx)
    p = ctx.probe
    scenario = ctx.scenario("long_turn")
    busy = await p.new_session(ctx.cwd)
    start, rid = await scenario_turn_start(ctx, scenario, busy)
    closed = await p.call("session/close", {"sessionId": busy}, rule=CLOSE)
    require(closed.error is None, CLOSE, f"closing a busy session failed: {closed.error}")
    answer = await response_or_fail(p, rid, start, ctx.wait, CLOSE, "the prompt of the closed session")
    require(
        answer.error is None, CLOSE, f"the closed session's prompt failed instead of ending cancelled: {answer.error}"
    )
    reason = stop_reason_of(answer)
    require(
        reason == "cancelled", "ACP1-017", f"close cancels work as session/cancel does, but stopReason is {reason!r}"
    )
    return None
