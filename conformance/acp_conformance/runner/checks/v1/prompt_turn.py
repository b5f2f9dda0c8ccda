"""The prompt turn (v1): ``session/prompt`` answered with a v1 stop reason, the prompt blocks every agent takes."""

from __future__ import annotations

from typing import Any

import msgspec

from acp_session.codec import decoder
from acp_session.schema import v1
from acp_session.schema.types import ResourceLink, TextContent

from ...frames import Frame
from ...outcomes import Fail, NotApplicable
from ...registry import CheckContext, require
from ..common import HELLO, write_readme
from .base import V1, decode_problem, require_stop_reason, response_or_fail

__all__ = ["baseline_content", "prompt_turn", "unsupported_content"]


@V1(
    "prompt-turn",
    "session/prompt is answered with a v1 stop reason; the turn's updates match the v1 schema",
    "prompt turn",
    ("ACP1-012", "prompt-turn.mdx#stop-reasons", "schema:PromptResponse", "schema:SessionNotification"),
)
async def prompt_turn(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    turn = await p.run_turn(sid, HELLO)
    try:
        decoder(v1.PromptResponse)(msgspec.json.encode(turn.response.result))
    except msgspec.ValidationError as exc:
        raise Fail("schema:PromptResponse", f"the prompt result does not match the v1 schema: {exc}") from None
    reason = require_stop_reason(turn.response)
    updates = p.find(p.is_update(sid), turn.start, turn.response.index)
    for frame in updates:
        problem = decode_problem(frame)
        require(problem is None, "schema:SessionNotification", str(problem))
    return f"{len(updates)} updates, stopReason {reason}"


async def accepted(ctx: CheckContext, sid: str, blocks: list[Any], rule: str, what: str) -> Frame:
    """Send a prompt; once the turn shows output, cancel it (only acceptance matters): the prompt's response."""
    p = ctx.probe
    start = p.mark
    rid = await p.prompt(sid, "", blocks)
    first = await p.wait_for(
        lambda f: (
            (f.session_id == sid and f.update is not None) or (f.is_response and (f.message or {}).get("id") == rid)
        ),
        ctx.wait,
        start,
    )
    if first is not None and not first.is_response:
        await p.notify("session/cancel", v1.CancelNotification(session_id=sid))
    answer = await response_or_fail(p, rid, start, ctx.wait, rule, what)
    require(answer.error is None, rule, f"{what} was rejected: {answer.error}")
    return answer


@V1(
    "baseline-content",
    "text and resource_link prompt blocks are accepted",
    "prompt turn",
    ("ACP1-006", "ACP1-008", "ACP1-023"),
)
async def baseline_content(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    readme = write_readme(ctx.cwd)
    blocks = [TextContent(text="Have a look at this file."), ResourceLink(name="README.md", uri=f"file://{readme}")]
    await accepted(ctx, sid, blocks, "ACP1-023", "a prompt with text and resource_link blocks")
    return None


@V1(
    "unsupported-content",
    "a prompt block type the agent did not advertise: the agent's choice in v1 (always n/a)",
    "prompt turn",
    ("ACP1-023",),
    needs_session=False,
)
async def unsupported_content(ctx: CheckContext) -> str | None:
    # v1 says other block types are enabled by capabilities; it does not require rejecting them, so an agent
    # that accepts an image it did not advertise breaks nothing (the v2 set has a check for it: ACP2-012).
    raise NotApplicable("v1 does not require rejecting block types the agent did not advertise (its choice)")
