"""Transport (v2): what the agent writes to stdout (one JSON-RPC message per line, UTF-8, no message over several
lines), JSON-RPC batches, a connection that outlives bad input, and the agent's exit at the end of its input.

Batches: the current v2 schema (``schema/v2/schema.json``, the normative text, and the npm SDK 2.4.0 built from
it) has no batch shapes; the older v2 docs (``transports.mdx``, which the official kit's ACP-BATCH-2xx ids cite)
require them. Each batch rule is its own ADVISORY check (reported, never deciding): an agent that refuses a
batch as a whole, as the schema lets it, is not judged on what it would do with the batch's entries.
"""

from __future__ import annotations

import json
from typing import Any

import anyio

from acp_session.schema.types import CloseSessionRequest, ListSessionsRequest

from ...frames import Frame
from ...outcomes import Fail, NotApplicable
from ...registry import CheckContext, require
from ..common import HELLO
from .base import V2

__all__ = [
    "batch_empty",
    "batch_invalid_entries",
    "batch_notifications",
    "batch_requests",
    "connection_survives",
    "framing",
    "one_line_messages",
    "stdin_eof_exit",
    "stdout_utf8",
]


async def _traffic(ctx: CheckContext) -> list[Frame]:
    """A session, a turn, a listing and a close: what the agent wrote for them, with what it wrote starting up."""
    p = ctx.probe
    start = p.mark
    sid = await p.new_session(ctx.cwd)
    await p.run_turn(sid, HELLO)
    await p.call("session/list", ListSessionsRequest(), rule="session-list.mdx")
    await p.call("session/close", CloseSessionRequest(session_id=sid), rule="ACP2-074")
    await p.barrier()
    return p.own_frames(start)


def _message_problem(raw: bytes) -> str | None:
    """Why a line is not one JSON-RPC 2.0 message object (or a non-empty array of them); its bytes are read as
    UTF-8 with replacement, since the encoding is ``stdout-utf8``'s subject."""
    text = raw.decode("utf-8", "replace")
    if not text.strip():
        return "a blank line"
    try:
        value = json.loads(text)
    except ValueError:
        return f"not JSON: {text[:60]!r}"
    if value == []:
        return "an empty array"
    for item in value if isinstance(value, list) else [value]:
        if not isinstance(item, dict):
            return f"a JSON {type(item).__name__}, not a JSON-RPC message object"
        if item.get("jsonrpc") != "2.0":
            return 'no "jsonrpc": "2.0"'
        if "method" in item and "id" in item and item["id"] is None:
            return "a request whose id is null (ACP2-004)"
        if "method" not in item and ("result" in item or "error" in item) and "id" not in item:
            return "a response without an id"
    return None


@V2(
    "framing",
    "every line the agent writes to stdout is one JSON-RPC 2.0 message object",
    "transport",
    ("transports.mdx#stdio", "ACP2-004"),
)
async def framing(ctx: CheckContext) -> str | None:
    frames = await _traffic(ctx)
    for frame in frames:
        problem = f"oversized frame: {frame.problem}" if not frame.raw else _message_problem(frame.raw)
        if problem is not None:
            what = f"stdout line {frame.index + 1} is not an ACP message: {problem}"
            raise Fail("transports.mdx#stdio", what, offending=frame.raw)
    return f"{len(frames)} lines, all JSON-RPC messages"


@V2(
    "stdout-utf8",
    "what the agent writes to stdout is valid UTF-8",
    "transport",
    ("transports.mdx#stdio",),
)
async def stdout_utf8(ctx: CheckContext) -> str | None:
    frames = await _traffic(ctx)
    for frame in frames:
        try:
            frame.raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise Fail(
                "transports.mdx#stdio", f"stdout line {frame.index + 1} is not UTF-8: {exc}", offending=frame.raw
            ) from None
    return None


@V2(
    "one-line-messages",
    "no message the agent writes spreads over several lines",
    "transport",
    ("transports.mdx#stdio",),
)
async def one_line_messages(ctx: CheckContext) -> str | None:
    frames = await _traffic(ctx)
    broken = [f for f in frames if f.raw and _message_problem(f.raw) is not None]
    for i, first in enumerate(broken):
        run = [first]
        for frame in broken[i + 1 :]:
            if frame.index != run[-1].index + 1:
                break
            run.append(frame)
            joined = b"\n".join(f.raw for f in run).decode("utf-8", "replace")
            try:
                json.loads(joined)
            except ValueError:
                continue
            raise Fail(
                "transports.mdx#stdio",
                f"stdout lines {first.index + 1}-{frame.index + 1} are one message spread over {len(run)} lines: "
                "messages are newline-delimited and contain no embedded newlines",
                offending=first.raw,
            )
    return None


# -- batches ----------------------------------------------------------------------------------------------------

_NOTICE = {"jsonrpc": "2.0", "method": "_acp_conformance/batch_notice", "params": {}}


def _request(id: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id, "method": "session/list", "params": {}}


async def _send_batch(ctx: CheckContext, batch: list[Any], ids: tuple[str, ...] = ()) -> list[Any]:
    """Send ``batch`` as one line; what the agent answered, as JSON values (objects and arrays alike; its own
    requests and notifications meanwhile, e.g. of a turn still running in a session of an earlier check, and its
    answers to the runner's own numbered requests are no answer to it). With ``ids``, the answers to those
    requests are waited for (they may come after quicker ones), or a refusal."""
    p = ctx.probe
    start = p.mark
    await p.send_raw(json.dumps(batch).encode())
    seen: set[str] = set()

    def settled(frame: Frame) -> bool:
        value = _json(frame)
        items = value if isinstance(value, list) else [value]
        seen.update(str(i.get("id")) for i in items if isinstance(i, dict))
        return set(ids) <= seen or (isinstance(value, dict) and value.get("id") is None and "error" in value)

    if ids:
        await p.wait_for(settled, ctx.wait, start)
    await p.barrier()
    out = []
    for frame in p.frames[start:]:
        value = _json(frame)
        if isinstance(value, dict) and ("method" in value or type(value.get("id")) is int):
            continue  # the batch's ids are strings; the runner's own requests (the barrier too) are numbered
        if value is not None:
            out.append(value)
    return out


def _json(frame: Frame) -> Any:
    try:
        return json.loads(frame.raw)
    except ValueError:
        return None


def _flat(answers: list[Any]) -> list[Any]:
    return [item for answer in answers for item in (answer if isinstance(answer, list) else [answer])]


def _refused(answers: list[Any]) -> bool:
    """The agent took the batch as one invalid message: a single -32600 with id null (the schema has no batches)."""
    return (
        len(answers) == 1
        and isinstance(answers[0], dict)
        and answers[0].get("id") is None
        and (answers[0].get("error") or {}).get("code") == -32600
    )


@V2(
    "batch-empty",
    "an empty batch [] gets one -32600 error with id null, not an array",
    "transport",
    ("transports.mdx#batches",),
    prompts=False,
)
async def batch_empty(ctx: CheckContext) -> str | None:
    answers = await _send_batch(ctx, [])
    require(bool(answers), "transports.mdx#batches", "an empty batch got no answer")
    require(
        _refused(answers), "transports.mdx#batches", f"an empty batch must get one -32600 with id null, got {answers}"
    )
    return None


@V2(
    "batch-notifications",
    "a batch of notifications only gets no reply at all",
    "transport",
    ("transports.mdx#batches",),
    prompts=False,
)
async def batch_notifications(ctx: CheckContext) -> str | None:
    answers = await _send_batch(ctx, [_NOTICE, _NOTICE])
    require(not answers, "transports.mdx#batches", f"a batch of notifications was answered: {answers}")
    return None


@V2(
    "batch-requests",
    "a batch of requests gets one array with an answer per request (an agent that refuses batches is not judged)",
    "transport",
    ("transports.mdx#batches",),
    prompts=False,
)
async def batch_requests(ctx: CheckContext) -> str | None:
    answers = await _send_batch(
        ctx, [_request("acp-conformance-batch-1"), _NOTICE, _request("acp-conformance-batch-2")]
    )
    if _refused(answers):
        raise NotApplicable("the agent refuses batches as a whole (one -32600): the current v2 schema has none")
    arrays = [a for a in answers if isinstance(a, list)]
    require(
        len(arrays) == 1 and len(answers) == 1,
        "transports.mdx#batches",
        f"a batch of requests must get one array of answers, got {answers}",
    )
    ids = sorted(str(a.get("id")) for a in arrays[0] if isinstance(a, dict))
    require(
        ids == ["acp-conformance-batch-1", "acp-conformance-batch-2"],
        "transports.mdx#batches",
        f"the array must hold one answer per request (by id), got ids {ids}",
    )
    return None


@V2(
    "batch-invalid-entries",
    "a batch's invalid entries get -32600 with id null each, its valid requests still run",
    "transport",
    ("transports.mdx#batches",),
    prompts=False,
)
async def batch_invalid_entries(ctx: CheckContext) -> str | None:
    answers = await _send_batch(
        ctx, [1, _request("acp-conformance-batch-3"), {"jsonrpc": "2.0"}], ("acp-conformance-batch-3",)
    )
    if _refused(answers):
        raise NotApplicable("the agent refuses batches as a whole (one -32600): the current v2 schema has none")
    items = [a for a in _flat(answers) if isinstance(a, dict)]
    invalid = [a for a in items if a.get("id") is None and (a.get("error") or {}).get("code") == -32600]
    require(len(invalid) == 2, "transports.mdx#batches", f"two invalid entries must get a -32600 each, got {answers}")
    ran = [a for a in items if a.get("id") == "acp-conformance-batch-3"]
    require(bool(ran), "transports.mdx#batches", "the valid request in a batch with invalid entries got no answer")
    return None


@V2(
    "connection-survives",
    "after malformed input (bad params, a request without a method, an empty batch) requests are still answered",
    "transport",
    ("transports.mdx#stdio", "schema:ErrorCode(-32600)"),
    prompts=False,
)
async def connection_survives(ctx: CheckContext) -> str | None:
    p = ctx.probe
    await p.call("session/new", {"cwd": 42}, rule="schema:ErrorCode(-32602)")
    await p.send_raw(b'{"jsonrpc":"2.0","id":"acp-conformance-no-method","params":{}}')
    await p.send_raw(b"[]")
    # Answered at all, with a result or an error, the connection is usable (p.call fails when no answer comes).
    frame = await p.call("session/list", {"cwd": ctx.cwd}, rule="transports.mdx#stdio")
    return f"session/list answered with {'a result' if frame.error is None else f'error {frame.error_code}'}"


@V2(
    "stdin-eof-exit",
    "the agent exits by itself once its stdin is closed",
    "transport",
    ("transports.mdx#stdio",),
    needs_session=False,
    fresh=True,
    ends_process=True,
)
async def stdin_eof_exit(ctx: CheckContext) -> str | None:
    p = ctx.probe
    await ctx.initialize()
    close = getattr(p.agent, "close_stdin", None)
    if close is None:
        raise NotApplicable("the agent is not a process of this runner (no stdin to close)")
    await close()
    began = anyio.current_time()
    with anyio.move_on_after(ctx.wait):
        await p.agent.wait()
    require(
        p.agent.returncode is not None,
        "transports.mdx#stdio",
        f"the agent was still running {ctx.wait:g}s after its stdin was closed",
    )
    return f"exited {anyio.current_time() - began:.2f}s after the end of its input"
