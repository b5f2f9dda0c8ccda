"""Transport (v1): each stdout line one JSON-RPC message, stdout valid UTF-8, only the updates the client asked
for, and an agent that ends when its input does. Each check makes one observation of the same kind of exchange
(a session and a short turn), so one defect fails the check that names it and no other."""

from __future__ import annotations

from typing import Any

import anyio
import msgspec

from acp_session.transport import AgentProcess

from ...frames import Frame
from ...outcomes import Fail, NotApplicable
from ...registry import CheckContext, require
from ..common import HELLO
from .base import V1

__all__ = ["framing", "shutdown", "stdout_utf8", "unasked_updates"]

UNADVERTISED_UPDATES = {"notice": "ACP1-019", "compaction_update": "ACP1-020", "compaction_summary_chunk": "ACP1-020"}
_json = msgspec.json.Decoder()


async def _exchange(ctx: CheckContext) -> list[Frame]:
    """A session and a short turn; what the agent wrote while starting and for it (the check's own lines)."""
    p = ctx.probe
    start = p.mark
    sid = await p.new_session(ctx.cwd)
    await p.run_turn(sid, HELLO)
    await p.barrier()
    return p.own_frames(start)


def message_problem(raw: bytes) -> str | None:
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
        problem = message_problem(frame.raw) if frame.raw else frame.problem
        if problem is not None:
            raise Fail("transports.mdx#stdio", f"stdout line {frame.index + 1} is not a JSON-RPC message: {problem}")
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
