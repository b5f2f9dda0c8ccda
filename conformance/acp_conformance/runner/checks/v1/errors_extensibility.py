"""Errors and extensibility (v1): unknown methods and custom (``_``) requests, malformed params, the connection
after errors, error messages, ``_meta`` on a prompt and custom fields where the schema has none; and what the
official kit only records (INFORMATIONAL: a line that is not JSON, JSON that is no JSON-RPC message, a prompt for
a session never created), which nothing here fails for: the spec says nothing about them."""

from __future__ import annotations

from acp_session.schema import v1

from ...frames import Frame
from ...outcomes import Fail, NotApplicable
from ...registry import CheckContext, require
from ..common import HELLO, invalid_params_common
from .base import V1, basic_exchange, exchange_messages, require_stop_reason, response_or_fail, unknown_root_keys

__all__ = [
    "custom_root_fields",
    "error_messages",
    "ext_method",
    "invalid_params",
    "meta_accepted",
    "record_invalid_request",
    "record_parse_error",
    "record_unknown_session",
    "unknown_method",
    "usable_after_error",
]

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


@V1(
    "unknown-method",
    "an unknown method gets error -32601 (Method not found)",
    "errors and extensibility",
    ("schema:ErrorCode(-32601)", "extensibility.mdx#custom-requests"),
    needs_session=False,
)
async def unknown_method(ctx: CheckContext) -> str | None:
    p = ctx.probe
    rule = "schema:ErrorCode(-32601)"
    frame = await p.call("acp_conformance/unknown", {}, rule=rule)
    require(frame.error_code == -32601, rule, f"acp_conformance/unknown: got {frame.message}")
    # A custom (_) method the agent does not know: the same code, if it answers (that it answers is ext-method's).
    start = p.mark
    rid = await p.request("_acp_conformance/unknown", {})
    custom = await p.response(rid, ctx.wait, start)
    if custom is None:
        ctx.note("_acp_conformance/unknown was not answered (ext-method judges that)")
    else:
        require(custom.error_code == -32601, rule, f"_acp_conformance/unknown: got {custom.message}")
    return None


@V1(
    "ext-method",
    "a custom (_) request the agent does not know gets an answer: a result or any error",
    "errors and extensibility",
    ("extensibility.mdx#custom-requests",),
    needs_session=False,
)
async def ext_method(ctx: CheckContext) -> str | None:
    p = ctx.probe
    start = p.mark
    rid = await p.request("_acp_conformance/custom", {"question": "are custom requests answered?"})
    answer = await p.response(rid, ctx.wait, start)
    require(
        answer is not None,
        "extensibility.mdx#custom-requests",
        f"no answer to the custom request _acp_conformance/custom within {ctx.wait:g}s (custom requests must be "
        "answered, with a result or an error)",
    )
    assert answer is not None
    return f"answered with {'error ' + str(answer.error_code) if answer.error is not None else 'a result'}"


@V1(
    "invalid-params",
    "malformed params get -32602",
    "errors and extensibility",
    ("schema:ErrorCode(-32602)",),
    prompts=False,
)
async def invalid_params(ctx: CheckContext) -> str | None:
    return await invalid_params_common(ctx, {"cwd": 42, "mcpServers": []})


async def _provoke_errors(ctx: CheckContext, *, not_an_object: bool) -> list[tuple[str, object]]:
    """Requests every agent must refuse: ``(what, answer frame or None)`` for each (``not_an_object``: also one
    whose params are not an object)."""
    p = ctx.probe
    out: list[tuple[str, object]] = []
    probes: list[tuple[str, str, object]] = [
        ("an unknown method", "acp_conformance/unknown", {}),
        ("session/new without cwd", "session/new", {"mcpServers": []}),
    ]
    if not_an_object:
        probes.append(("session/new with params that are not an object", "session/new", []))
    for what, method, params in probes:
        start = p.mark
        rid = await p.request(method, params)
        out.append((what, await p.response(rid, ctx.wait, start)))
    return out


@V1(
    "usable-after-error",
    "after requests it refused, the agent still answers the next one (session/new succeeds)",
    "errors and extensibility",
    ("overview.mdx#error-handling",),
    prompts=False,
)
async def usable_after_error(ctx: CheckContext) -> str | None:
    p = ctx.probe
    await _provoke_errors(ctx, not_an_object=True)
    frame = await p.call("session/new", p.new_session_params(ctx.cwd), rule="overview.mdx#error-handling")
    require(
        frame.error is None,
        "overview.mdx#error-handling",
        f"after the requests it refused, a valid session/new failed: {frame.error}",
    )
    return None


@V1(
    "error-messages",
    "error messages are short single sentences: not empty, no line breaks",
    "errors and extensibility",
    ("schema:Error",),
    prompts=False,
)
async def error_messages(ctx: CheckContext) -> str | None:
    judged = 0
    for what, frame in await _provoke_errors(ctx, not_an_object=False):
        error = getattr(frame, "error", None)
        text = error.get("message") if isinstance(error, dict) else None
        if not isinstance(text, str):
            continue  # no error, or no string message: response-shape's concern
        judged += 1
        require(bool(text.strip()), "schema:Error", f"the error for {what} has an empty message")
        require("\n" not in text, "schema:Error", f"the error message for {what} has a line break: {text!r}")
    if not judged:
        raise NotApplicable("neither refused request got an error with a message (response-shape judges that)")
    return f"{judged} error message(s)"


@V1(
    "meta-accepted",
    "a prompt carrying _meta (a traceparent) is accepted and ends with a v1 stop reason",
    "errors and extensibility",
    ("extensibility.mdx#the-_meta-field", "ACP1-005"),
)
async def meta_accepted(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    meta = {"traceparent": TRACEPARENT, "acpConformance": True}
    start = p.mark
    request = v1.PromptRequest(session_id=sid, prompt=[v1.TextContent(text=HELLO)], meta=meta)
    rid = await p.request("session/prompt", request)
    rule = "extensibility.mdx#the-_meta-field"
    answer = await response_or_fail(p, rid, start, ctx.wait, rule, "the prompt with _meta")
    require(answer.error is None, rule, f"a prompt carrying _meta was refused: {answer.error}")
    return f"stopReason {require_stop_reason(answer)}"


@V1(
    "custom-root-fields",
    "the messages of a basic exchange carry no root field their v1 type lacks (custom data goes in _meta)",
    "errors and extensibility",
    ("extensibility.mdx#the-_meta-field",),
)
async def custom_root_fields(ctx: CheckContext) -> str | None:
    p = ctx.probe
    for frame in exchange_messages(p, await basic_exchange(ctx)):
        found = unknown_root_keys(p, frame)
        if found is not None and found[1]:
            raise Fail(
                "extensibility.mdx#the-_meta-field",
                f"line {frame.index + 1}: the {found[0]} carry field(s) {found[1]} the v1 schema does not define "
                "(custom data belongs in _meta)",
            )
    return None


def _what(frame: Frame | None) -> str:
    if frame is None:
        return "no answer"
    if frame.error is not None:
        return f"error {frame.error_code} with id {(frame.message or {}).get('id')!r}"
    return f"an answer {frame.raw[:80]!r}"


async def _after_line(ctx: CheckContext, line: bytes) -> str:
    """Send one raw line; what came back before a barrier, and whether session/new still works after it."""
    p = ctx.probe
    start = p.mark
    await p.send_raw(line)
    await p.barrier()
    answers = p.find(lambda f: f.is_response and (f.message or {}).get("id") != p.sent_ids, start)
    frame = await p.call("session/new", p.new_session_params(ctx.cwd), rule="overview.mdx")
    usable = "session/new still works" if frame.error is None else f"session/new then failed: {frame.error}"
    return f"{_what(answers[0] if answers else None)}; {usable}"


@V1(
    "record-parse-error",
    "records what the agent does with a line that is not JSON (the spec is silent)",
    "errors and extensibility",
    ("schema:ErrorCode(-32700)",),
    prompts=False,
)
async def record_parse_error(ctx: CheckContext) -> str | None:
    return await _after_line(ctx, b"this line is not JSON {")


@V1(
    "record-invalid-request",
    "records what the agent does with JSON that is no JSON-RPC message (the spec is silent)",
    "errors and extensibility",
    ("schema:ErrorCode(-32600)",),
    prompts=False,
)
async def record_invalid_request(ctx: CheckContext) -> str | None:
    return await _after_line(ctx, b'{"acpConformance": "not a JSON-RPC message"}')


@V1(
    "record-unknown-session",
    "records the answer to a prompt for a session the agent never created (v1 names no error code)",
    "errors and extensibility",
    ("error.mdx",),
    needs_session=False,
)
async def record_unknown_session(ctx: CheckContext) -> str | None:
    p = ctx.probe
    start = p.mark
    request = v1.PromptRequest(session_id="acp-conformance-no-such-session", prompt=[v1.TextContent(text="Hello")])
    rid = await p.request("session/prompt", request)
    return _what(await p.response(rid, ctx.wait, start))
