"""Errors and extensibility (v2): unknown methods and notifications, malformed params, ``_meta`` on a prompt."""

from __future__ import annotations

from ...registry import CheckContext
from ..common import invalid_params_common, unknown_method_common
from .base import V2, accepted

__all__ = ["invalid_params", "meta_accepted", "unknown_method"]


@V2(
    "unknown-method",
    "unknown methods get -32601; unknown notifications should get no answer",
    "errors and extensibility",
    ("schema:ErrorCode(-32601)", "extensibility.mdx"),
    needs_session=False,
)
async def unknown_method(ctx: CheckContext) -> str | None:
    return await unknown_method_common(ctx)


@V2(
    "invalid-params",
    "malformed params get -32602",
    "errors and extensibility",
    ("schema:ErrorCode(-32602)",),
    prompts=False,
)
async def invalid_params(ctx: CheckContext) -> str | None:
    return await invalid_params_common(ctx, {"cwd": 42})


@V2(
    "meta-accepted",
    "a prompt carrying _meta (a traceparent) is accepted",
    "errors and extensibility",
    ("extensibility.mdx",),
)
async def meta_accepted(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    start = p.mark
    meta = {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
    params = {"sessionId": sid, "prompt": [{"type": "text", "text": "hello"}], "_meta": meta}
    rid = await p.request("session/prompt", params)
    await accepted(p, sid, start, rid, "extensibility.mdx", "a prompt carrying _meta")
    return None
