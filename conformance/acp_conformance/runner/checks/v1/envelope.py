"""The JSON-RPC envelope and the schema of every message (v1): responses echo the request's id (integer and
string), carry exactly one of ``result``/``error`` (an error with an integer code and a string message),
notifications get no answer at all, and every message of a basic exchange matches the v1 schema."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from acp_session.schema import v1

from ...frames import Frame
from ...outcomes import Fail
from ...probe import Probe
from ...registry import CheckContext, require
from ..common import HELLO
from .base import V1
from .messages import message_problem

__all__ = ["message_schema", "notifications_unanswered", "response_ids", "response_shape"]

STRING_ID = "acp-conformance-string-id"


def _is_answer(frame: Frame) -> bool:
    """A line that is not a request or notification: an answer of some kind, even one without result or error."""
    return frame.message is not None and "method" not in frame.message


async def raw_request(p: Probe, request_id: Any, method: str, params: Any, wait: float) -> Frame | None:
    """Send a request with an id of our choosing (a string, say) and wait for the answer carrying exactly it."""
    start = p.mark
    line = msgspec.json.encode({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
    await p.send_raw(line)

    def echoes(frame: Frame) -> bool:
        rid = (frame.message or {}).get("id")
        return _is_answer(frame) and type(rid) is type(request_id) and rid == request_id

    return await p.wait_for(echoes, wait, start)


@V1(
    "message-schema",
    "every message of a basic exchange (initialize, session/new, a prompt turn) matches the v1 schema",
    "transport",
    ("schema:AgentResponse", "schema:AgentNotification", "schema:AgentRequest"),
)
async def message_schema(ctx: CheckContext) -> str | None:
    p = ctx.probe
    start = p.mark
    sid = await p.new_session(ctx.cwd)
    await p.run_turn(sid, HELLO)
    frames = [p.frames[p.init_index]] if p.init_index >= 0 else []
    frames += [f for f in p.frames[start:] if f.message is not None]
    for frame in frames:
        problem = message_problem(p, frame)
        if problem is not None:
            raise Fail("schema:AgentResponse" if frame.method is None else "schema:AgentNotification", problem)
    return f"{len(frames)} messages"


@V1(
    "response-ids",
    "a response carries exactly the id of the request it answers, integer or string",
    "transport",
    ("ACP1-004", "schema:RequestId"),
)
async def response_ids(ctx: CheckContext) -> str | None:
    p = ctx.probe
    start = p.mark
    frame = await p.call("session/new", p.new_session_params(ctx.cwd), rule="ACP1-004")
    rid = (frame.message or {}).get("id")
    require(type(rid) is int, "ACP1-004", f"an integer request id came back as {rid!r}")
    params = msgspec.to_builtins(v1.NewSessionRequest(cwd=ctx.cwd, mcp_servers=[]))
    answer = await raw_request(p, STRING_ID, "session/new", params, ctx.wait)
    if answer is None:
        others = [f.raw[:120] for f in p.frames[start:] if _is_answer(f) and (f.message or {}).get("id") != rid]
        raise Fail(
            "ACP1-004",
            f"no answer with the string id {STRING_ID!r} within {ctx.wait:g}s"
            + (f" (answers seen: {others[0]!r})" if others else ""),
        )
    await p.barrier()
    ours = set(range(1, p.sent_ids + 1)) | {STRING_ID}
    for frame in p.find(_is_answer, start):
        rid = (frame.message or {}).get("id")
        require(
            rid in ours and not isinstance(rid, (bool, float)),
            "ACP1-004",
            f"line {frame.index + 1}: an answer with id {rid!r}, which none of our requests had",
        )
    return None


def _answer_to(rid: int) -> Callable[[Frame], bool]:
    return lambda frame: _is_answer(frame) and (frame.message or {}).get("id") == rid


def envelope_problem(frame: Frame) -> str | None:
    """What is wrong with one answer's envelope: exactly one of result and error; an error object with an
    integer code and a string message."""
    message = frame.message or {}
    if ("result" in message) == ("error" in message):
        both = "both result and error" if "result" in message else "neither result nor error"
        return f"line {frame.index + 1}: an answer with {both}: {frame.raw[:160]!r}"
    if "error" in message:
        error = message["error"]
        if not isinstance(error, dict):
            return f"line {frame.index + 1}: error is not an object: {error!r}"
        code, text = error.get("code"), error.get("message")
        if type(code) is not int:
            return f"line {frame.index + 1}: error code {code!r} is not an integer"
        if not isinstance(text, str):
            return f"line {frame.index + 1}: error message {text!r} is not a string"
    return None


@V1(
    "response-shape",
    "a response has exactly one of result and error; an error has an integer code and a string message",
    "transport",
    ("overview.mdx#error-handling", "schema:Error"),
    prompts=False,
)
async def response_shape(ctx: CheckContext) -> str | None:
    p = ctx.probe
    start = p.mark
    # A success, and errors every agent must give: params without the required cwd, an unknown method.
    probes = [
        ("session/new", p.new_session_params(ctx.cwd)),
        ("session/new", {"mcpServers": []}),
        ("acp_conformance/unknown", {}),
    ]
    for method, params in probes:
        rid = await p.request(method, params)
        answer = await p.wait_for(_answer_to(rid), None, start)
        require(answer is not None, "overview.mdx#error-handling", f"no answer to {method} within {ctx.wait:g}s")
    await p.barrier()
    answers = p.find(_is_answer, start)
    for frame in answers:
        problem = envelope_problem(frame)
        require(problem is None, "overview.mdx#error-handling", str(problem))
    return f"{len(answers)} answers"


@V1(
    "notifications-unanswered",
    "notifications (session/cancel, an unknown _ notification) get no answer at all",
    "transport",
    ("overview.mdx#error-handling", "extensibility.mdx#custom-notifications"),
    prompts=False,
)
async def notifications_unanswered(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    start, first_id = p.mark, p.sent_ids + 1
    await p.notify("session/cancel", v1.CancelNotification(session_id=sid))  # nothing running: still no answer
    await p.notify("_acp_conformance/notice", {"note": "an unknown custom notification"})
    await p.barrier()
    ours = set(range(first_id, p.sent_ids + 1))
    for frame in p.find(_is_answer, start):
        rid = (frame.message or {}).get("id")
        require(
            rid in ours and not isinstance(rid, (bool, float)),
            "overview.mdx#error-handling",
            f"a notification was answered (notifications never get a response): {frame.raw[:160]!r}",
        )
    return None
