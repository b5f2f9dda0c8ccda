"""Transport (v2): stdout carries only ACP messages (``framing``), and what the agent does with a JSON-RPC batch
(``batch``, ADVISORY: reported, never deciding).

The texts disagree. The current v2 schema (``schema/v2/schema.json``, the normative one, and the npm SDK 2.4.0
built from it) has no batch shapes: a message is one object. The older v2 docs (``transports.mdx``, which the
official kit's ACP-BATCH-2xx ids cite) require batches (an empty one answered with one ``-32600``, a batch
of requests with one array of answers). We follow the schema, so a batch is an extension: the batch check sends
an empty batch and a one-request batch and reports what came back, and holds only that the connection is
still usable afterwards (ACP-JSONRPC-005).
"""

from __future__ import annotations

import json
from typing import Any

from acp_session.schema.types import CloseSessionRequest, ListSessionsRequest

from ...frames import Frame
from ...outcomes import Fail
from ...registry import CheckContext, require
from ..common import HELLO
from .base import V2, decode_update

__all__ = ["batch", "framing"]


@V2(
    "framing",
    "stdout carries only newline-delimited ACP messages that match the schema",
    "transport",
    ("transports.mdx#stdio", "ACP2-004", "ACP2-057", "schema:SessionUpdate", "schema:AgentResponse"),
)
async def framing(ctx: CheckContext) -> str | None:
    p = ctx.probe
    start = p.mark
    sid = await p.new_session(ctx.cwd)
    await p.run_turn(sid, HELLO)
    await p.call("session/list", ListSessionsRequest(), rule="session-list.mdx")
    await p.call("session/close", CloseSessionRequest(session_id=sid), rule="ACP2-074")
    await p.barrier()
    frames = p.own_frames(start)
    for frame in frames:  # what the agent wrote while starting, and for this check
        if frame.problem is not None:
            what = f"stdout line {frame.index + 1} is not an ACP message: {frame.problem}"
            raise Fail("transports.mdx#stdio", what, offending=frame.raw)
        if frame.method == "session/update":
            problem = decode_update(frame)
            if problem is not None:
                raise Fail("schema:SessionUpdate", problem)
        state = frame.state()
        if state is not None and state not in ("idle", "running", "requires_action"):
            raise Fail("ACP2-057", f"line {frame.index + 1}: state {state!r}, which the client did not advertise")
        if frame.is_response and frame.message is not None and "id" not in frame.message:
            raise Fail("schema:AgentResponse", f"line {frame.index + 1}: response without id")
    return f"{len(frames)} lines, all well-formed"


_PROBE_ID = "acp-conformance-batch-1"


def _answers(frames: list[Frame]) -> list[Any]:
    """The agent's lines after the batches were sent, as JSON values (objects and arrays alike)."""
    out = []
    for frame in frames:
        try:
            out.append(json.loads(frame.raw))
        except ValueError:
            continue
    return out


def _describe_empty(answers: list[Any]) -> str:
    single = [a for a in answers if isinstance(a, dict) and a.get("id") is None and "error" in a]
    if single:
        code = (single[0].get("error") or {}).get("code")
        return f"[] -> one error {code} with id null" + (" (as the older docs require)" if code == -32600 else "")
    if any(a == [] for a in answers):
        return "[] -> an empty array (the older docs forbid it)"
    return "[] -> no answer"


def _describe_one(answers: list[Any]) -> str:
    for a in answers:
        if isinstance(a, list) and any(isinstance(x, dict) and x.get("id") == _PROBE_ID for x in a):
            return "[request] -> an array of answers (a batch, as the older docs require)"
        if isinstance(a, dict) and a.get("id") == _PROBE_ID:
            return "[request] -> a single answer, not an array"
    errors = [a for a in answers if isinstance(a, dict) and a.get("id") is None and "error" in a]
    if errors:
        return f"[request] -> one error {(errors[0].get('error') or {}).get('code')} with id null (no batches)"
    return "[request] -> no answer for the request"


@V2(
    "batch",
    "what the agent does with a JSON-RPC batch (the schema has none, the older docs require them); reported",
    "transport",
    ("transports.mdx#batches",),
    needs_session=False,
    prompts=False,
    fresh=True,
)
async def batch(ctx: CheckContext) -> str | None:
    p = ctx.probe
    await ctx.initialize()
    start = p.mark
    await p.send_raw(b"[]")
    await p.barrier()
    empty = _describe_empty(_answers(p.frames[start:]))
    start = p.mark
    request = {"jsonrpc": "2.0", "id": _PROBE_ID, "method": "_acp_conformance/batch_probe", "params": {}}
    await p.send_raw(json.dumps([request]).encode())
    await p.barrier()
    one = _describe_one(_answers(p.frames[start:]))
    # Whatever it made of them, the connection must still work (ACP-JSONRPC-005).
    rid = await p.request("_acp_conformance/after_batch", {})
    after = await p.response(rid)
    require(after is not None, "ACP-JSONRPC-005", "after the batches the agent answers no request any more")
    return f"{empty}; {one}"
