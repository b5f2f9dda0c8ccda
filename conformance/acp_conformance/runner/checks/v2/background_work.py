"""Background work (v2): announced, listed on every state update, removed when it ends."""

from __future__ import annotations

from ...frames import Frame
from ...outcomes import Fail, NotApplicable
from ...registry import CheckContext, require
from .base import V2

__all__ = ["background_work"]


@V2(
    "background-work",
    "background work is announced first, listed on every state update, and removed after it ends",
    "background work",
    ("ACP2-041", "ACP2-042"),
    scenarios=("background",),
)
async def background_work(ctx: CheckContext) -> str | None:
    p = ctx.probe
    scenario = ctx.scenario("background")
    sid = await p.new_session(ctx.cwd)
    turn = await p.run_turn(sid, scenario.text(ctx.cwd), timeout=scenario.timeout)
    start = turn.start

    def listing(frame: Frame) -> bool:
        return frame.state() is not None and frame.session_id == sid and bool((frame.update or {}).get("background"))

    first = await p.wait_for(listing, scenario.timeout, start)
    if first is None:
        raise NotApplicable(f"the {scenario.describe()} scenario listed no background work")
    final = await p.wait_for(
        lambda f: f.state() is not None and f.session_id == sid and (f.update or {}).get("background") == [],
        scenario.timeout,
        first.index,
    )
    if final is None:
        raise NotApplicable(f"the background work of {scenario.describe()} did not end within {scenario.timeout:g}s")
    announced: set[str] = set()
    finished: set[str] = set()
    reporting = False
    listed: set[str] = set()
    for f in p.frames[start : final.index + 1]:
        u = f.update or {}
        if f.session_id != sid:
            continue
        kind = f.update_kind()
        if kind == "terminal_update":
            announced.add(f"terminal:{u.get('terminalId')}")
            if u.get("exitStatus") is not None:
                finished.add(f"terminal:{u.get('terminalId')}")
        elif kind in ("tool_call_update", "tool_call"):
            announced.add(f"tool_call:{u.get('toolCallId')}")
            if u.get("status") in ("completed", "failed", "cancelled"):
                finished.add(f"tool_call:{u.get('toolCallId')}")
        if f.state() is None:
            continue
        background = u.get("background")
        if reporting:
            require(
                isinstance(background, list),
                "ACP2-042",
                f"state_update at line {f.index + 1} omits background after background work was reported",
            )
        if isinstance(background, list):
            reporting = True
            now = set()
            for item in background:
                if isinstance(item, dict):
                    key = "terminal" if item.get("type") == "terminal" else "tool_call"
                    now.add(f"{key}:{item.get('terminalId') if key == 'terminal' else item.get('toolCallId')}")
            for item in sorted(now - announced):
                raise Fail("ACP2-041", f"{item} listed before it was announced")
            for item in sorted(listed - now):
                require(item in finished, "ACP2-041", f"{item} removed before its final status / exitStatus")
            listed = now
    return None
