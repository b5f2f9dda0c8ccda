"""What the official kit only records (INFORMATIONAL, v1): what the agent does with a line that is not JSON, with
JSON that is no JSON-RPC message, with a prompt for a session it never created, and how much it writes to stderr.
The spec says nothing about these, so nothing here fails for the behaviour itself; each check says what it saw."""

from __future__ import annotations

from acp_session.schema import v1

from ...frames import Frame
from ...registry import CheckContext
from .base import V1

__all__ = ["record_invalid_request", "record_parse_error", "record_stderr", "record_unknown_session"]


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


@V1(
    "record-stderr",
    "records how much the agent writes to stderr while it opens a session (the spec is silent)",
    "transport",
    ("transports.mdx#stdio",),
    needs_session=False,
)
async def record_stderr(ctx: CheckContext) -> str | None:
    p = ctx.probe
    before = p.stderr_bytes
    frame = await p.call("session/new", p.new_session_params(ctx.cwd), rule="overview.mdx")
    await p.barrier()
    after = p.stderr_bytes
    opened = "session/new succeeded" if frame.error is None else f"session/new failed: {frame.error}"
    if before is None or after is None:
        return f"stderr not observable (--url); {opened}"
    return f"{after - before} byte(s) on stderr while opening a session ({after} since the process started); {opened}"
