"""The prompt turn (v2): the prompt accepted with its ``messageId``, the turn's states and stop reason, the content
blocks a prompt may carry."""

from __future__ import annotations

from typing import Any

import msgspec

from acp_session.codec import decoder
from acp_session.schema.types import (
    AudioContent,
    EmbeddedResource,
    ImageContent,
    PromptResponse,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from ...frames import OUTPUT_KINDS
from ...outcomes import AUTH_REQUIRED, Fail, LoginRequired, NotApplicable
from ...registry import CheckContext, require
from ..common import HELLO, MESSAGE_KINDS, known_or_custom, late_output, texts, write_readme
from .base import V2, accepted

__all__ = [
    "baseline_content",
    "prompt_accepted",
    "prompt_capabilities",
    "stop_reason",
    "turn_lifecycle",
    "unsupported_content",
    "user_message_echo",
]


KNOWN_STOP_REASONS = frozenset({"end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled", "error"})


@V2(
    "prompt-accepted",
    "session/prompt is answered with the inserted message's messageId",
    "prompt turn",
    ("ACP2-064", "schema:PromptResponse.messageId"),
)
async def prompt_accepted(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    turn = await p.run_turn(sid, HELLO)
    result = turn.response.result
    message_id = result.get("messageId") if isinstance(result, dict) else None
    require(
        isinstance(message_id, str),
        "ACP2-064",
        f"the prompt response must carry the inserted message's messageId (got {result!r})",
    )
    try:
        decoder(PromptResponse)(msgspec.json.encode(result))
    except msgspec.ValidationError as exc:
        raise Fail("schema:PromptResponse", str(exc)) from None
    return None


@V2(
    "user-message-echo",
    "the accepted prompt is reported as a user message update with its messageId",
    "prompt turn",
    ("prompt-lifecycle.mdx#2-prompt-accepted", "schema:PromptResponse.messageId"),
)
async def user_message_echo(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    text = "Conformance check: please reply with one word."
    turn = await p.run_turn(sid, text)
    users = p.find(p.is_update(sid, "user_message", "user_message_chunk"), turn.start)
    require(bool(users), "prompt-lifecycle.mdx#2-prompt-accepted", "no user_message(_chunk) update for the prompt")
    result = turn.response.result
    message_id = result.get("messageId") if isinstance(result, dict) else None
    if isinstance(message_id, str):
        users = [f for f in users if (f.update or {}).get("messageId") == message_id]
        require(
            bool(users),
            "schema:PromptResponse.messageId",
            f"no user message update carries the response's messageId {message_id!r}",
        )
    echoed = "".join(texts(f.update or {}) for f in users)
    require(
        text in echoed,
        "prompt-lifecycle.mdx#2-prompt-accepted",
        f"the user message update does not carry the prompt's content (got {echoed!r})",
    )
    return None


@V2(
    "turn-lifecycle",
    "running is reported before the turn's output, idle at its end, no turn output after idle",
    "prompt turn",
    ("ACP2-050", "ACP2-056"),
)
async def turn_lifecycle(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    turn = await p.run_turn(sid, HELLO, settle=False)
    assert turn.end is not None
    idle = turn.end
    outputs = p.find(lambda f: f.session_id == sid and f.update_kind() in OUTPUT_KINDS, turn.start, idle.index)
    active = p.find(p.is_state(sid, "running", "requires_action"), turn.start, idle.index)
    require(bool(active), "ACP2-050", "no running (or requires_action) state_update before the idle update")
    if outputs:
        require(
            active[0].index < outputs[0].index,
            "ACP2-050",
            f"output ({outputs[0].update_kind()}) arrived before running was reported",
        )
    # Background work may go on after idle; messages, thoughts and plans of the turn may not.
    late = await late_output(p, sid, idle.index, MESSAGE_KINDS | {"plan_update"})
    require(late is None, "ACP2-056", f"{late.update_kind() if late else ''} after the idle update ended the turn")
    return f"{len(outputs)} output updates between running and idle"


@V2(
    "stop-reason",
    "the idle update ending a turn carries a known or _-prefixed stop reason; scenario turns end as they should",
    "prompt turn",
    ("ACP2-044", "ACP2-051", "ACP2-043", "ACP2-065", "prompt-lifecycle.mdx#stop-reasons"),
    optional_scenarios=("refusal", "max_tokens", "error"),
)
async def stop_reason(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    turn = await p.run_turn(sid, HELLO, settle=False)
    reason = turn.stop_reason
    # The schema says SHOULD (ACP2-044, ACP2-051), the prompt-lifecycle page MUST: the docs decide.
    require(reason is not None, "ACP2-044", "the idle update that ends the turn has no stopReason (a MUST in the docs)")
    require(
        known_or_custom(reason, KNOWN_STOP_REASONS),
        "prompt-lifecycle.mdx#stop-reasons",
        f"stopReason {reason!r} is neither known nor _-prefixed",
    )
    seen = [str(reason)]
    for name, expected in (("refusal", "refusal"), ("max_tokens", "max_tokens"), ("error", "error")):
        scenario = ctx.optional_scenario(name)
        if scenario is None:
            continue
        start = p.mark
        rid = await p.prompt(sid, scenario.text(ctx.cwd))
        response = await p.response(rid, scenario.timeout, start)
        require(response is not None, "ACP2-064", f"no response to the {name} scenario's prompt")
        assert response is not None
        if response.error is not None:
            if response.error_code == AUTH_REQUIRED:
                raise LoginRequired("session/prompt", response.error)
            # ACP2-065: once inserted (its user message reported), the prompt is answered with success even
            # when the work fails.
            inserted = p.find(p.is_update(sid, "user_message", "user_message_chunk"), start)
            rule = "ACP2-065" if inserted else "prompt-lifecycle.mdx#2-prompt-accepted"
            raise Fail(rule, f"the {scenario.describe()} prompt was answered with an error: {response.error}")
        idle = await p.wait_idle(sid, start, rule="ACP2-050", timeout=scenario.timeout)
        got = (idle.update or {}).get("stopReason")
        if got != expected:
            ctx.note(f"the {scenario.describe()} scenario ended with {got!r}, not {expected!r}")
            continue
        seen.append(expected)
        if expected == "error" and not isinstance((idle.update or {}).get("error"), dict):
            ctx.warn("ACP2-043", "the error stop reason comes without an error object")
    return ", ".join(seen)


@V2(
    "baseline-content",
    "text and resource_link prompt blocks are accepted",
    "prompt turn",
    ("ACP2-009", "ACP2-011", "ACP2-083"),
)
async def baseline_content(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    readme = write_readme(ctx.cwd)
    blocks = [TextContent(text="Have a look at this file."), ResourceLink(name="README.md", uri=f"file://{readme}")]
    start = p.mark
    rid = await p.prompt(sid, "", blocks)
    frame = await p.response(rid, start=start)
    require(frame is not None, "ACP2-083", "no response to a prompt with text and resource_link blocks")
    assert frame is not None
    if frame.error_code == AUTH_REQUIRED:
        raise LoginRequired("session/prompt", frame.error)
    require(frame.error is None, "ACP2-011", f"text + resource_link prompt rejected: {frame.message}")
    await p.settle(sid, start)
    return None


@V2(
    "unsupported-content",
    "a prompt block type the agent did not advertise is rejected with -32602 and not inserted",
    "prompt turn",
    ("ACP2-012", "schema:PromptResponse"),
)
async def unsupported_content(ctx: CheckContext) -> str | None:
    p = ctx.probe
    prompt_caps = p.session_capability("prompt")
    if isinstance(prompt_caps, dict) and prompt_caps.get("image") is not None:
        raise NotApplicable("image prompts are advertised")
    sid = await p.new_session(ctx.cwd)
    start = p.mark
    rid = await p.prompt(sid, "", [ImageContent(data="iVBORw0KGgo=", mime_type="image/png")])
    frame = await p.response(rid, start=start)
    require(frame is not None, "ACP2-012", "no response to a prompt with an image block")
    assert frame is not None
    require(frame.error_code == -32602, "ACP2-012", f"image block without the capability: got {frame.message}")
    await p.barrier()
    users = p.find(p.is_update(sid, "user_message", "user_message_chunk"), start)
    require(not users, "schema:PromptResponse", "a rejected prompt produced a user message update")
    return None


_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
_WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="


def _capability_blocks(readme: str) -> dict[str, Any]:
    return {
        "image": ImageContent(data=_PNG, mime_type="image/png"),
        "audio": AudioContent(data=_WAV, mime_type="audio/wav"),
        "embeddedContext": EmbeddedResource(
            resource=TextResourceContents(uri=f"file://{readme}", text="# A file\n", mime_type="text/markdown")
        ),
    }


@V2(
    "prompt-capabilities",
    "a prompt with each block type the agent advertises (image, audio, embedded context) is accepted",
    "prompt turn",
    ("initialization.mdx#prompt-capabilities", "content.mdx"),
)
async def prompt_capabilities(ctx: CheckContext) -> str | None:
    p = ctx.probe
    offered = p.session_capability("prompt")
    prompt = offered if isinstance(offered, dict) else {}
    advertised = [name for name in ("image", "audio", "embeddedContext") if isinstance(prompt.get(name), dict)]
    if not advertised:
        raise NotApplicable("the agent advertises no image, audio or embedded context prompts")
    blocks = _capability_blocks(write_readme(ctx.cwd))
    sid = await p.new_session(ctx.cwd)
    for name in advertised:
        start = p.mark
        rid = await p.prompt(sid, "", [TextContent(text=f"A prompt with a {name} block."), blocks[name]])
        await accepted(p, sid, start, rid, "initialization.mdx#prompt-capabilities", f"a prompt with a {name} block")
    return ", ".join(advertised)
