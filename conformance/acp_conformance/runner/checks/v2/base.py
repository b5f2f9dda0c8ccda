"""What the v2 area modules share: the ``V2`` decorator, the schema check of a ``session/update``, a second
prompt sent while the first runs, a prompt that must be accepted."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from acp_session.codec import decoder
from acp_session.schema.types import UpdateSessionNotification

from ...frames import Frame
from ...outcomes import AUTH_REQUIRED, LoginRequired
from ...probe import Probe
from ...registry import CheckContext, CheckFn, check, require
from ..common import update_schema_problem

__all__ = ["V2", "accepted", "decode_update", "second_prompt"]


_update_decode = decoder(UpdateSessionNotification)


def V2(id: str, title: str, area: str, rules: tuple[str, ...], **kwargs: Any) -> Callable[[CheckFn], CheckFn]:
    return check(2, id, title, area, rules, **kwargs)


def decode_update(frame: Frame) -> str | None:
    return update_schema_problem(frame, _update_decode, "the schema")


async def second_prompt(ctx: CheckContext, sid: str) -> tuple[int, int]:
    p = ctx.probe
    at = p.mark
    return at, await p.prompt(sid, "A second prompt, sent while the first one runs.")


async def accepted(p: Probe, sid: str, start: int, rid: int, rule: str, what: str) -> None:
    """The prompt ``rid`` was answered without an error (-32000 is a login the run lacks), then its turn settles."""
    frame = await p.response(rid, start=start)
    require(frame is not None, rule, f"no response to {what}")
    assert frame is not None
    if frame.error_code == AUTH_REQUIRED:
        raise LoginRequired("session/prompt", frame.error)
    require(frame.error is None, rule, f"{what} was rejected: {frame.message}")
    await p.settle(sid, start)  # the idle update is turn-lifecycle's subject
