"""Transport (v1): each stdout line one JSON-RPC message, stdout valid UTF-8, every message of a basic exchange in
the v1 schema, only the updates the client asked for, the JSON-RPC envelope (answers echo the request's id,
integer and string; exactly one of ``result``/``error``, an error with an integer code and a string message;
notifications never answered), an agent that ends when its input does, and (recorded only) its stderr. Each check
makes one observation, so one defect fails the check that names it and no other."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio
import msgspec

from acp_session.schema import v1
from acp_session.transport import AgentProcess

from ...frames import Frame
from ...outcomes import Fail, LoginRequired, NotApplicable
from ...probe import Probe
from ...registry import CheckContext, require
from .base import V1, basic_exchange, exchange_messages, message_problem

__all__ = [
    "framing",
    "message_schema",
    "notifications_unanswered",
    "record_stderr",
    "response_ids",
    "response_shape",
    "shutdown",
    "stdout_utf8",
    "unasked_updates",
]

UNADVERTISED_UPDATES = {"notice": "ACP1-019", "compaction_update": "ACP1-020", "compaction_summary_chunk": "ACP1-020"}
_json = msgspec.json.Decoder()


async def _exchange(ctx: CheckContext) -> list[Frame]:
    """What the agent wrote while starting, and for a basic exchange (a session and a short turn)."""
    p = ctx.probe
    exchange = await basic_exchange(ctx)
    return p.frames[: p.init_index + 1] + p.frames[max(exchange.start, p.init_index + 1) : exchange.end]


def line_message_problem(raw: bytes) -> str | None:
    """Why one stdout line is not a single JSON-RPC 2.0 message (its bytes read leniently: whether they are
    UTF-8 is the stdout-utf8 check's observation, not this one's)."""
    text = raw.decode("utf-8", "replace")
    if not text.strip():
        return "a blank line"
    try:
        value: Any = _json.decode(text.encode())
    except msgspec.DecodeError:
        return f"not JSON: {text[:60]!r}"
    if isinstance(value, list):
        return "a JSON array (a batch); every line must be one message"
    if not isinstance(value, dict):
        return f"a JSON {type(value).__name__}, not a message object"
    if value.get("jsonrpc") != "2.0":
        return 'no "jsonrpc": "2.0"'
    if "method" not in value and "result" not in value and "error" not in value:
        return "neither a request, a notification nor a response"
    return None


@V1(
    "framing",
    "every line the agent writes to stdout is one JSON-RPC 2.0 message",
    "transport",
    ("transports.mdx#stdio",),
)
async def framing(ctx: CheckContext) -> str | None:
    frames = await _exchange(ctx)
    for frame in frames:
        problem = line_message_problem(frame.raw) if frame.raw else frame.problem
        if problem is not None:
            what = f"stdout line {frame.index + 1} is not a JSON-RPC message: {problem}"
            raise Fail("transports.mdx#stdio", what, offending=frame.raw)
    return f"{len(frames)} lines, each one message"


@V1(
    "stdout-utf8",
    "the agent's stdout is valid UTF-8",
    "transport",
    ("transports.mdx#stdio",),
)
async def stdout_utf8(ctx: CheckContext) -> str | None:
    frames = await _exchange(ctx)
    for frame in frames:
        try:
            frame.raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            bad = frame.raw[exc.start : exc.start + 1]
            raise Fail(
                "transports.mdx#stdio", f"stdout line {frame.index + 1} is not valid UTF-8 (byte {exc.start}: {bad!r})"
            ) from None
    return f"{len(frames)} lines of UTF-8"


@V1(
    "unasked-updates",
    "no notice or compaction update is sent to a client that did not advertise them",
    "transport",
    ("ACP1-019", "ACP1-020", "ACP1-021"),
)
async def unasked_updates(ctx: CheckContext) -> str | None:
    for frame in await _exchange(ctx):
        # The runner advertises neither session.notices nor session.compaction.
        unasked = UNADVERTISED_UPDATES.get(str(frame.update_kind()))
        if frame.method == "session/update" and unasked is not None:
            raise Fail(unasked, f"line {frame.index + 1}: {frame.update_kind()} sent to a client that did not ask")
    return None


@V1(
    "shutdown",
    "once its stdin is closed the agent exits on its own (no signal needed)",
    "transport",
    ("transports.mdx#stdio",),
    fresh=True,
    ends_process=True,
)
async def shutdown(ctx: CheckContext) -> str | None:
    p = ctx.probe
    agent = p.agent
    if not isinstance(agent, AgentProcess):
        raise NotApplicable("the agent is not a process of this runner (--url): its shutdown is not observable")
    await ctx.initialize()
    await p.new_session(ctx.cwd)
    window = min(ctx.wait, 5.0)
    await agent.close_stdin()
    with anyio.move_on_after(window):
        await agent.wait()
    require(
        agent.returncode is not None,
        "transports.mdx#stdio",
        f"the agent was still running {window:g}s after its stdin was closed (it needs a signal to stop)",
    )
    return f"exit code {agent.returncode}"


STRING_ID = "acp-conformance-string-id"
UNKNOWN_SESSION = "acp-conformance-no-such-session"


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
    frames = exchange_messages(p, await basic_exchange(ctx))
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
    needs_session=False,
)
async def notifications_unanswered(ctx: CheckContext) -> str | None:
    p = ctx.probe
    try:
        sid = await p.new_session(ctx.cwd)
    except (Fail, LoginRequired):  # no session without a login: a cancel for none is a notification all the same
        sid = UNKNOWN_SESSION
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
