"""Transport (v1): stdout carries only ACP messages; updates match the v1 schema and were asked for; responses
echo our ids."""

from __future__ import annotations

from ...outcomes import Fail
from ...registry import CheckContext, require
from ..common import HELLO
from .base import V1, decode_problem

__all__ = ["framing"]


UNADVERTISED_UPDATES = {"notice": "ACP1-019", "compaction_update": "ACP1-020", "compaction_summary_chunk": "ACP1-020"}


@V1(
    "framing",
    "stdout carries only newline-delimited ACP messages; updates match the v1 schema and were asked for; "
    "responses echo our ids",
    "transport",
    (
        "transports.mdx#stdio",
        "ACP1-004",
        "schema:SessionNotification",
        "schema:AgentResponse",
        "ACP1-019",
        "ACP1-020",
        "ACP1-021",
    ),
)
async def framing(ctx: CheckContext) -> str | None:
    p = ctx.probe
    start = p.mark
    sid = await p.new_session(ctx.cwd)
    await p.run_turn(sid, HELLO)
    await p.barrier()
    frames = p.own_frames(start)
    for frame in frames:  # what the agent wrote while starting, and for this check
        if frame.problem is not None:
            what = f"stdout line {frame.index + 1} is not an ACP message: {frame.problem}"
            raise Fail("transports.mdx#stdio", what, offending=frame.raw)
        if frame.method == "session/update":
            problem = decode_problem(frame)
            if problem is not None:
                raise Fail("schema:SessionNotification", problem)
            # The runner advertises neither session.notices nor session.compaction.
            unasked = UNADVERTISED_UPDATES.get(str(frame.update_kind()))
            if unasked is not None:
                raise Fail(unasked, f"line {frame.index + 1}: {frame.update_kind()} sent to a client that did not ask")
        if frame.is_response and frame.message is not None:
            rid = frame.message.get("id")
            require(
                isinstance(rid, int) and 0 < rid <= p.sent_ids,
                "ACP1-004",
                f"line {frame.index + 1}: a response with id {rid!r}, which is none of our requests' ids",
            )
    return f"{len(frames)} lines, all well-formed"
