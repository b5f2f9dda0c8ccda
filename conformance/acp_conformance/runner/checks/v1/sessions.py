"""Sessions (v1): ``session/new``, and ``session/list`` and ``/delete`` when advertised."""

from __future__ import annotations

import msgspec

from acp_session.codec import decoder
from acp_session.schema import v1

from ...outcomes import Fail, NotApplicable
from ...registry import CheckContext, require
from ..common import session_delete_common, session_list_common
from .base import V1

__all__ = ["session_delete", "session_list", "session_new"]


@V1(
    "session-new",
    "session/new returns a session id; its modes and config options are well-formed",
    "sessions",
    ("ACP1-012", "session-setup.mdx#creating-a-session", "schema:NewSessionResponse", "session-config-options.mdx"),
    prompts=False,
)
async def session_new(ctx: CheckContext) -> str | None:
    p = ctx.probe
    result = await p.call_ok("session/new", p.new_session_params(ctx.cwd), rule="ACP1-012")
    try:
        response = decoder(v1.NewSessionResponse)(msgspec.json.encode(result))
    except msgspec.ValidationError as exc:
        raise Fail("schema:NewSessionResponse", f"session/new result does not match the v1 schema: {exc}") from None
    require(bool(response.session_id), "session-setup.mdx#creating-a-session", "an empty session id")
    modes = result.get("modes") if isinstance(result, dict) else None
    if isinstance(modes, dict):
        ids = [m.get("id") for m in modes.get("availableModes") or [] if isinstance(m, dict)]
        if modes.get("currentModeId") not in ids:
            ctx.warn("session-modes.mdx", f"currentModeId {modes.get('currentModeId')!r} is not one of {ids}")
    for option in result.get("configOptions") or [] if isinstance(result, dict) else []:
        # The runner does not advertise boolean config options.
        require(
            not (isinstance(option, dict) and option.get("type") == "boolean"),
            "session-config-options.mdx#boolean-config-options",
            f"boolean config option {option.get('id')!r} sent to a client that did not advertise support",
        )
    return None


@V1(
    "session-list",
    "session/list (when advertised) filters by cwd and is empty when nothing matches",
    "sessions",
    ("session-list.mdx", "schema:ListSessionsResponse"),
    prompts=False,
)
async def session_list(ctx: CheckContext) -> str | None:
    if ctx.probe.session_capability("list") is None:
        raise NotApplicable("sessionCapabilities.list is not advertised")
    return await session_list_common(ctx, "session-list.mdx")


@V1(
    "session-delete",
    "session/delete (when advertised) removes a session from session/list",
    "sessions",
    ("session-delete.mdx",),
)
async def session_delete(ctx: CheckContext) -> str | None:
    p = ctx.probe
    if p.session_capability("list") is None and p.session_capability("delete") is not None:
        raise NotApplicable("session/delete is advertised, session/list is not: nothing to observe")
    return await session_delete_common(ctx, p.session_capability("delete"), "session-delete.mdx")
