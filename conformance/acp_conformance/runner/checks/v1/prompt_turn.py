"""The prompt turn (v1): ``session/prompt`` answered with a v1 stop reason, the turn's updates, the prompt blocks
every agent takes, and those its prompt capabilities promise."""

from __future__ import annotations

from typing import Any

from acp_session.schema import v1
from acp_session.schema.types import ResourceLink, TextContent

from ...frames import Frame
from ...outcomes import Fail, NotApplicable
from ...registry import CheckContext, require
from ..common import write_readme
from .base import V1, basic_exchange, decode_problem, require_stop_reason, response_or_fail, schema_problem

__all__ = [
    "baseline_content",
    "prompt_audio",
    "prompt_embedded",
    "prompt_image",
    "prompt_turn",
    "turn_updates",
    "unsupported_content",
]

# A 1x1 transparent PNG and a WAV file of one silent sample: the smallest media a model could be given.
PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
WAV_SILENCE = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQIAAAAAAA=="


@V1(
    "prompt-turn",
    "a text prompt is answered with a v1 stop reason, in the v1 schema's shape",
    "prompt turn",
    ("ACP1-012", "prompt-turn.mdx#stop-reasons", "schema:PromptResponse"),
)
async def prompt_turn(ctx: CheckContext) -> str | None:
    turn = (await basic_exchange(ctx)).turn
    problem = schema_problem(v1.PromptResponse, turn.response.result)
    if problem is not None:
        raise Fail("schema:PromptResponse", f"the prompt result does not match the v1 schema: {problem}")
    return f"stopReason {require_stop_reason(turn.response)}"


@V1(
    "turn-updates",
    "every session/update of a prompt turn matches the v1 schema and names the prompted session",
    "prompt turn",
    ("ACP1-012", "prompt-turn.mdx#3-agent-reports-output", "schema:SessionNotification"),
)
async def turn_updates(ctx: CheckContext) -> str | None:
    p = ctx.probe
    exchange = await basic_exchange(ctx)
    sid, turn = exchange.sid, exchange.turn
    updates = p.find(lambda f: f.method == "session/update", turn.start, turn.response.index)
    if not updates:
        raise NotApplicable("the turn sent no session/update (an agent need not): nothing to judge")
    for frame in updates:
        problem = decode_problem(frame)
        require(problem is None, "schema:SessionNotification", str(problem))
        require(
            frame.session_id == sid,
            "prompt-turn.mdx#3-agent-reports-output",
            f"line {frame.index + 1}: a {frame.update_kind()} during the turn of session {sid} names session "
            f"{frame.session_id!r}",
        )
    return f"{len(updates)} update(s)"


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


async def _capability_turn(ctx: CheckContext, capability: str, block: Any, what: str) -> str:
    """With ``promptCapabilities.<capability>`` advertised, a prompt of text and ``block`` ends with a v1 stop
    reason (the capability promises the agent takes such blocks)."""
    p = ctx.probe
    caps = p.capabilities.get("promptCapabilities")
    if not isinstance(caps, dict) or caps.get(capability) is not True:
        raise NotApplicable(f"promptCapabilities.{capability} is not advertised")
    sid = await p.new_session(ctx.cwd)
    start = p.mark
    rid = await p.prompt(sid, "", [TextContent(text=f"What is in this {what}?"), block])
    rule = "schema:PromptCapabilities"
    answer = await response_or_fail(p, rid, start, ctx.wait, rule, f"the prompt with an {capability} block")
    require(
        answer.error is None, rule, f"{capability} is advertised, yet a prompt with such a block failed: {answer.error}"
    )
    return f"stopReason {require_stop_reason(answer)}"


@V1(
    "prompt-image",
    "with promptCapabilities.image, a prompt with an image block is answered with a v1 stop reason",
    "prompt turn",
    ("ACP1-023", "schema:PromptCapabilities", "schema:ImageContent"),
)
async def prompt_image(ctx: CheckContext) -> str | None:
    return await _capability_turn(ctx, "image", v1.ImageContent(data=PNG_1X1, mime_type="image/png"), "image")


@V1(
    "prompt-audio",
    "with promptCapabilities.audio, a prompt with an audio block is answered with a v1 stop reason",
    "prompt turn",
    ("ACP1-023", "schema:PromptCapabilities", "schema:AudioContent"),
)
async def prompt_audio(ctx: CheckContext) -> str | None:
    return await _capability_turn(ctx, "audio", v1.AudioContent(data=WAV_SILENCE, mime_type="audio/wav"), "sound")


@V1(
    "prompt-embedded",
    "with promptCapabilities.embeddedContext, a prompt with an embedded resource is answered with a v1 stop reason",
    "prompt turn",
    ("ACP1-023", "schema:PromptCapabilities", "schema:EmbeddedResource"),
)
async def prompt_embedded(ctx: CheckContext) -> str | None:
    readme = write_readme(ctx.cwd)
    with open(readme, encoding="utf-8") as handle:
        text = handle.read()
    resource = v1.TextResourceContents(text=text, uri=f"file://{readme}", mime_type="text/markdown")
    return await _capability_turn(ctx, "embeddedContext", v1.EmbeddedResource(resource=resource), "file")
