"""The prompt turn (v2): the prompt accepted with its ``messageId`` (distinct per prompt, echoed by the user
message), message ids on every message update, updates in the schema's shape and of known kinds, the turn's
states and stop reason, and the content blocks a prompt may carry."""

from __future__ import annotations

from typing import Any

from acp_session.schema.types import (
    AudioContent,
    EmbeddedResource,
    ImageContent,
    PromptResponse,
    ResourceLink,
    TextContent,
    TextResourceContents,
    UpdateSessionNotification,
)

from ...frames import OUTPUT_KINDS
from ...outcomes import AUTH_REQUIRED, Fail, LoginRequired, NotApplicable
from ...registry import CheckContext, require
from ...schema_strict import schema_problem
from ..common import MESSAGE_KINDS, known_or_custom, late_output, texts, write_readme
from .base import KNOWN_STOP_REASONS, MESSAGE_UPDATES, UPDATE_KINDS, V2, accepted, hello_turn, message_id, strict

__all__ = [
    "baseline_content",
    "message_ids",
    "message_ids_distinct",
    "prompt_accepted",
    "prompt_audio",
    "prompt_embedded_context",
    "prompt_image",
    "running_before_idle",
    "scenario_stop_reasons",
    "stop_reason",
    "turn_ends_idle",
    "turn_lifecycle",
    "unsupported_content",
    "update_kinds_known",
    "update_schema",
    "user_message_echo",
]


@V2(
    "prompt-accepted",
    "session/prompt is answered with the inserted message's messageId (a non-empty string)",
    "prompt turn",
    ("ACP2-064", "schema:PromptResponse"),
)
async def prompt_accepted(ctx: CheckContext) -> str | None:
    _sid, turn = await hello_turn(ctx)
    result = turn.response.result
    require(
        message_id(result) is not None,
        "ACP2-064",
        f"the prompt response must carry the inserted message's messageId (got {result!r})",
    )
    strict(result, PromptResponse, "schema:PromptResponse", "the session/prompt result")
    return None


@V2(
    "message-ids-distinct",
    "two prompts in one session are answered with two different messageIds",
    "prompt turn",
    ("prompt-lifecycle.mdx#2-prompt-accepted", "schema:MessageId"),
    turns=2,
)
async def message_ids_distinct(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid, first = await hello_turn(ctx)
    second = await p.run_turn(sid, "And one more short sentence, please.")
    ids = [message_id(first.response.result), message_id(second.response.result)]
    if None in ids:
        raise NotApplicable("a prompt response carries no messageId (prompt-accepted's subject)")
    require(ids[0] != ids[1], "schema:MessageId", f"two prompts of one session both got messageId {ids[0]!r}")
    return None


@V2(
    "user-message-echo",
    "the accepted prompt is reported as a user message update with the response's messageId",
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
    answered = message_id(turn.response.result)
    if answered is None:
        raise NotApplicable("the prompt response carries no messageId to compare (prompt-accepted's subject)")
    mine = [f for f in users if (f.update or {}).get("messageId") == answered]
    require(
        bool(mine),
        "schema:PromptResponse.messageId",
        f"no user message update carries the response's messageId {answered!r} "
        f"(they carry {sorted({str((f.update or {}).get('messageId')) for f in users})})",
    )
    echoed = "".join(texts(f.update or {}) for f in mine)
    require(
        text in echoed,
        "prompt-lifecycle.mdx#2-prompt-accepted",
        f"the user message update does not carry the prompt's content (got {echoed!r})",
    )
    return None


@V2(
    "message-ids",
    "every message update and chunk of a turn carries a non-empty messageId",
    "prompt turn",
    ("prompt-lifecycle.mdx#3-agent-reports-output", "schema:ContentChunk"),
)
async def message_ids(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid, turn = await hello_turn(ctx)
    messages = p.find(p.is_update(sid, *MESSAGE_UPDATES), turn.start)
    if not messages:
        raise NotApplicable("the turn reported no message")
    for frame in messages:
        value = (frame.update or {}).get("messageId")
        require(
            isinstance(value, str) and value != "",
            "prompt-lifecycle.mdx#3-agent-reports-output",
            f"line {frame.index + 1}: a {frame.update_kind()} update with messageId {value!r}",
        )
    return f"{len(messages)} message update(s)"


@V2(
    "update-schema",
    "every session/update of a turn matches the schema and names the prompted session",
    "prompt turn",
    ("schema:UpdateSessionNotification", "schema:SessionUpdate"),
)
async def update_schema(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid, turn = await hello_turn(ctx)
    await p.barrier()
    updates = [f for f in p.frames[turn.start :] if f.method == "session/update"]
    if not updates:
        raise NotApplicable("the turn sent no session/update")
    for frame in updates:
        require(
            frame.session_id == sid,
            "schema:UpdateSessionNotification",
            f"line {frame.index + 1}: an update during the turn of {sid} names session {frame.session_id!r}",
        )
        problem = schema_problem(frame.message.get("params") if frame.message else None, UpdateSessionNotification)
        require(problem is None, "schema:SessionUpdate", f"line {frame.index + 1}: {problem}")
    return f"{len(updates)} update(s)"


@V2(
    "update-kinds-known",
    "update kinds, states and tool call content types are known or _-prefixed",
    "prompt turn",
    ("extensibility.mdx#enum-and-tagged-union-variants", "schema:SessionUpdate"),
    optional_scenarios=("tool_call",),
)
async def update_kinds_known(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid, turn = await hello_turn(ctx)
    start = turn.start
    scenario = ctx.optional_scenario("tool_call")
    if scenario is not None:
        await p.run_turn(sid, scenario.text(ctx.cwd), timeout=scenario.timeout)
    await p.barrier()
    rule = "extensibility.mdx#enum-and-tagged-union-variants"
    seen = 0
    for frame in p.find(p.is_update(sid), start):
        update, kind = frame.update or {}, frame.update_kind()
        seen += 1
        require(known_or_custom(kind, UPDATE_KINDS), rule, f"line {frame.index + 1}: update kind {kind!r}")
        if kind == "state_update":
            state = update.get("state")
            require(known_or_custom(state, {"idle", "running", "requires_action"}), rule, f"state {state!r}")
        items = update.get("content") if kind in ("tool_call_update", "tool_call_content_chunk") else None
        for item in items if isinstance(items, list) else [items] if isinstance(items, dict) else []:
            kind_of = item.get("type") if isinstance(item, dict) else None
            require(known_or_custom(kind_of, {"content", "diff", "terminal"}), rule, f"tool content {kind_of!r}")
    if not seen:
        raise NotApplicable("the turns sent no session/update")
    return f"{seen} update(s)"


@V2(
    "running-before-idle",
    "a turn that ends with an idle update reported running (or requires_action) before it",
    "prompt turn",
    ("ACP2-050",),
)
async def running_before_idle(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid, turn = await hello_turn(ctx)
    if turn.end is None:
        raise NotApplicable("no idle update ended the turn (turn-ends-idle's subject)")
    active = p.find(p.is_state(sid, "running", "requires_action"), turn.start, turn.end.index)
    require(bool(active), "ACP2-050", "no running (or requires_action) state_update before the idle update")
    return None


@V2(
    "turn-ends-idle",
    "an accepted prompt's turn ends with an idle state_update",
    "prompt turn",
    ("ACP2-050", "ACP2-056"),
)
async def turn_ends_idle(ctx: CheckContext) -> str | None:
    await hello_turn(ctx, settle=False)  # fails ACP2-050 when no idle update comes within the wait
    return None


@V2(
    "turn-lifecycle",
    "running is reported before the turn's output, no turn output after idle, only the standard states",
    "prompt turn",
    ("ACP2-050", "ACP2-056", "ACP2-057"),
)
async def turn_lifecycle(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid, turn = await hello_turn(ctx)
    if turn.end is None:
        raise NotApplicable("no idle update ended the turn (turn-ends-idle's subject)")
    idle = turn.end
    for frame in p.find(p.is_state(sid), turn.start, idle.index + 1):
        state = frame.state()
        # The runner advertises no extra states, so the standard ones only (ACP2-057).
        require(state in ("idle", "running", "requires_action"), "ACP2-057", f"state {state!r}, not advertised")
    outputs = p.find(lambda f: f.session_id == sid and f.update_kind() in OUTPUT_KINDS, turn.start, idle.index)
    active = p.find(p.is_state(sid, "running", "requires_action"), turn.start, idle.index)
    if outputs and active:
        require(
            active[0].index < outputs[0].index,
            "ACP2-050",
            f"output ({outputs[0].update_kind()}) arrived before running was reported",
        )
    elif not active:
        ctx.note("no running update at all (running-before-idle's subject)")
    # Background work may go on after idle; messages, thoughts and plans of the turn may not.
    late = await late_output(p, sid, idle.index, MESSAGE_KINDS | {"plan_update"})
    require(late is None, "ACP2-056", f"{late.update_kind() if late else ''} after the idle update ended the turn")
    return f"{len(outputs)} output updates between running and idle"


@V2(
    "stop-reason",
    "the idle update ending a turn carries a known or _-prefixed stop reason",
    "prompt turn",
    ("ACP2-044", "ACP2-051", "prompt-lifecycle.mdx#stop-reasons"),
)
async def stop_reason(ctx: CheckContext) -> str | None:
    _sid, turn = await hello_turn(ctx)
    if turn.end is None:
        raise NotApplicable("no idle update ended the turn (turn-ends-idle's subject)")
    reason = turn.stop_reason
    # The schema says SHOULD (ACP2-044, ACP2-051), the prompt-lifecycle page MUST: the docs decide.
    require(reason is not None, "ACP2-044", "the idle update that ends the turn has no stopReason (a MUST in the docs)")
    require(
        known_or_custom(reason, KNOWN_STOP_REASONS),
        "prompt-lifecycle.mdx#stop-reasons",
        f"stopReason {reason!r} is neither known nor _-prefixed",
    )
    return str(reason)


@V2(
    "scenario-stop-reasons",
    "turns that refuse, run out of tokens or fail end with that stop reason, their prompts answered with success",
    "prompt turn",
    ("ACP2-065", "ACP2-043", "prompt-lifecycle.mdx#stop-reasons"),
    optional_scenarios=("refusal", "max_tokens", "error"),
    one_of_scenarios=True,
    turns=3,
)
async def scenario_stop_reasons(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    seen: list[str] = []
    for name in ("refusal", "max_tokens", "error"):
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
        idle = await p.wait_for(p.is_state(sid, "idle"), scenario.timeout, start)
        if idle is None:
            raise NotApplicable(f"the {scenario.describe()} turn ended without an idle update (turn-ends-idle's)")
        got = (idle.update or {}).get("stopReason")
        if got != name:
            ctx.note(f"the {scenario.describe()} scenario ended with {got!r}, not {name!r}")
            continue
        seen.append(name)
        if name == "error" and not isinstance((idle.update or {}).get("error"), dict):
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


_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
_WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="


def _blocks(cwd: str) -> dict[str, Any]:
    readme = write_readme(cwd)
    return {
        "image": ImageContent(data=_PNG, mime_type="image/png"),
        "audio": AudioContent(data=_WAV, mime_type="audio/wav"),
        "embeddedContext": EmbeddedResource(
            resource=TextResourceContents(uri=f"file://{readme}", text="# A file\n", mime_type="text/markdown")
        ),
    }


def _advertised(ctx: CheckContext, name: str) -> bool:
    prompt = ctx.probe.session_capability("prompt")
    return isinstance(prompt, dict) and isinstance(prompt.get(name), dict)


@V2(
    "unsupported-content",
    "a prompt block type the agent did not advertise (image or audio) is rejected with -32602 and not inserted",
    "prompt turn",
    ("ACP2-012", "schema:PromptResponse"),
)
async def unsupported_content(ctx: CheckContext) -> str | None:
    p = ctx.probe
    kind = next((k for k in ("image", "audio") if not _advertised(ctx, k)), None)
    if kind is None:
        raise NotApplicable("image and audio prompts are both advertised")
    sid = await p.new_session(ctx.cwd)
    start = p.mark
    rid = await p.prompt(sid, "", [_blocks(ctx.cwd)[kind]])
    frame = await p.response(rid, start=start)
    require(frame is not None, "ACP2-012", f"no response to a prompt with an {kind} block")
    assert frame is not None
    require(frame.error_code == -32602, "ACP2-012", f"{kind} block without the capability: got {frame.message}")
    await p.barrier()
    users = p.find(p.is_update(sid, "user_message", "user_message_chunk"), start)
    require(not users, "schema:PromptResponse", "a rejected prompt produced a user message update")
    return kind


async def _capability_prompt(ctx: CheckContext, name: str) -> str | None:
    if not _advertised(ctx, name):
        raise NotApplicable(f"{name} prompts are not advertised")
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    start = p.mark
    rid = await p.prompt(sid, "", [TextContent(text=f"A prompt with a {name} block."), _blocks(ctx.cwd)[name]])
    await accepted(p, sid, start, rid, "initialization.mdx#prompt-capabilities", f"a prompt with a {name} block")
    return None


@V2(
    "prompt-image",
    "a prompt with an image block is accepted when image prompts are advertised",
    "prompt turn",
    ("initialization.mdx#prompt-capabilities", "content.mdx"),
)
async def prompt_image(ctx: CheckContext) -> str | None:
    return await _capability_prompt(ctx, "image")


@V2(
    "prompt-audio",
    "a prompt with an audio block is accepted when audio prompts are advertised",
    "prompt turn",
    ("initialization.mdx#prompt-capabilities", "content.mdx"),
)
async def prompt_audio(ctx: CheckContext) -> str | None:
    return await _capability_prompt(ctx, "audio")


@V2(
    "prompt-embedded-context",
    "a prompt with an embedded resource is accepted when embedded context is advertised",
    "prompt turn",
    ("initialization.mdx#prompt-capabilities", "content.mdx"),
)
async def prompt_embedded_context(ctx: CheckContext) -> str | None:
    return await _capability_prompt(ctx, "embeddedContext")
