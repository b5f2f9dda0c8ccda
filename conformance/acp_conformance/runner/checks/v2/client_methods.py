"""Client methods (v2): what the agent calls or notifies on the client during a turn. v2 has no ``fs/*`` or
``terminal/*`` methods (the agent owns its terminals and files), and the runner advertises no elicitation."""

from __future__ import annotations

from ...frames import Frame
from ...outcomes import NotApplicable
from ...registry import CheckContext, require
from .base import CLIENT_METHODS, V2, hello_turn

__all__ = ["client_methods_known", "no_elicitation_unadvertised"]


async def _agent_messages(ctx: CheckContext) -> list[Frame]:
    """The requests and notifications the agent sent during a plain turn and, with the scenario, a tool call."""
    p = ctx.probe
    sid, turn = await hello_turn(ctx)
    scenario = ctx.optional_scenario("tool_call")
    if scenario is not None:
        await p.run_turn(sid, scenario.text(ctx.cwd), timeout=scenario.timeout)
    await p.barrier()
    return p.find(lambda f: f.method is not None and f.problem is None, turn.start)


@V2(
    "client-methods-known",
    "during a turn the agent calls and notifies only methods the v2 schema gives the client, or _-prefixed ones",
    "client methods",
    ("extensibility.mdx#custom-requests", "schema:AgentRequest", "schema:AgentNotification"),
    optional_scenarios=("tool_call",),
    turns=2,
)
async def client_methods_known(ctx: CheckContext) -> str | None:
    frames = await _agent_messages(ctx)
    if not frames:
        raise NotApplicable("the agent called or notified nothing during the turns")
    for frame in frames:
        method = frame.method or ""
        require(
            method in CLIENT_METHODS or method.startswith("_"),
            "extensibility.mdx#custom-requests",
            f"line {frame.index + 1}: the agent called {method!r}, which v2 does not define (v1's fs/* and "
            "terminal/* are gone)",
        )
    return f"{len({f.method for f in frames})} method(s)"


@V2(
    "no-elicitation-unadvertised",
    "the agent sends no elicitation/create to a client that advertised no elicitation",
    "client methods",
    ("elicitation.mdx#checking-support",),
    optional_scenarios=("tool_call",),
    turns=2,
)
async def no_elicitation_unadvertised(ctx: CheckContext) -> str | None:
    frames = await _agent_messages(ctx)
    asked = [f for f in frames if f.method == "elicitation/create"]
    require(
        not asked,
        "elicitation.mdx#checking-support",
        f"line {asked[0].index + 1}: elicitation/create sent to a client without the capability" if asked else "",
    )
    return None
