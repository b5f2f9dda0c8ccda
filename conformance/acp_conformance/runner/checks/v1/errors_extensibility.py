"""Errors and extensibility (v1): unknown methods and notifications, malformed params."""

from __future__ import annotations

from ...registry import CheckContext
from ..common import invalid_params_common, unknown_method_common
from .base import V1

__all__ = ["invalid_params", "unknown_method"]


@V1(
    "unknown-method",
    "unknown methods get -32601; unknown notifications should get no answer",
    "errors and extensibility",
    ("schema:ErrorCode(-32601)", "extensibility.mdx"),
    needs_session=False,
)
async def unknown_method(ctx: CheckContext) -> str | None:
    return await unknown_method_common(ctx)


@V1(
    "invalid-params",
    "malformed params get -32602",
    "errors and extensibility",
    ("schema:ErrorCode(-32602)",),
    prompts=False,
)
async def invalid_params(ctx: CheckContext) -> str | None:
    return await invalid_params_common(ctx, {"cwd": 42, "mcpServers": []})
