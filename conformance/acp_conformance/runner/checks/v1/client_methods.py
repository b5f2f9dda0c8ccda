"""Client methods (v1): the agent's ``fs/*`` and ``terminal/*`` calls, which the runner answers inside the check's
sandbox directory through the library's providers, judged for their shape and for the capabilities offered."""

from __future__ import annotations

from ...client_calls import ClientCall
from ...outcomes import Fail, LoginRequired, NotApplicable
from ...probe import Probe
from ...registry import CheckContext
from ..common import first_problem, write_readme
from .base import V1

__all__ = ["client_capabilities", "client_fs", "client_terminals"]


def _calls(p: Probe, start: int, prefix: str) -> list[ClientCall]:
    return [c for c in p.calls if c.frame.index >= start and c.method.startswith(prefix)]


def _call_problems(calls: list[ClientCall], sid: str) -> list[str]:
    problems = [problem for call in calls for problem in call.problems]
    for call in calls:
        if call.params.get("sessionId") != sid:
            problems.append(
                f"schema:{call.method}: sessionId {call.params.get('sessionId')!r} is not the turn's session"
            )
    return problems


@V1(
    "client-fs",
    "the agent's fs/* calls match the v1 schema, name the turn's session and use absolute paths",
    "client methods",
    ("file-system.mdx", "overview.mdx", "schema:ReadTextFileRequest", "schema:WriteTextFileRequest"),
    scenarios=("tool_call",),
)
async def client_fs(ctx: CheckContext) -> str | None:
    p = ctx.probe
    scenario = ctx.scenario("tool_call")
    write_readme(ctx.cwd)
    sid = await p.new_session(ctx.cwd)
    turn = await p.run_turn(sid, scenario.text(ctx.cwd), timeout=scenario.timeout)
    calls = _calls(p, turn.start, "fs/")
    if not calls:
        raise NotApplicable(f"the {scenario.describe()} scenario made no fs/* call")
    first_problem(_call_problems(calls, sid))
    return ", ".join(f"{c.method} {c.outcome}" for c in calls)


@V1(
    "client-terminals",
    "the agent's terminal/* calls match the v1 schema and use terminals it created (release is noted)",
    "client methods",
    ("terminals.mdx", "overview.mdx", "schema:CreateTerminalRequest"),
    scenarios=("terminal",),
)
async def client_terminals(ctx: CheckContext) -> str | None:
    p = ctx.probe
    scenario = ctx.scenario("terminal")
    sid = await p.new_session(ctx.cwd)
    turn = await p.run_turn(sid, scenario.text(ctx.cwd), timeout=scenario.timeout)
    calls = _calls(p, turn.start, "terminal/")
    if not calls:
        raise NotApplicable(f"the {scenario.describe()} scenario made no terminal/* call")
    problems = _call_problems(calls, sid)
    created: set[str] = set()
    released: set[str] = set()
    for call in calls:
        if call.method == "terminal/create":
            term = (call.result or {}).get("terminalId") if isinstance(call.result, dict) else None
            if isinstance(term, str):
                created.add(term)
            continue
        term = call.params.get("terminalId")
        if term not in created:
            problems.append(f"terminals.mdx: {call.method} for terminal {term!r}, which this turn did not create")
        elif term in released:
            problems.append(f"terminals.mdx: {call.method} for terminal {term!r} after releasing it")
        if call.method == "terminal/release" and isinstance(term, str):
            released.add(term)
    first_problem(problems)
    kept = sorted(created - released)
    if kept:
        # The agent must release a terminal when it no longer needs it: when that is, a client cannot tell.
        ctx.note(f"terminal(s) {kept} not released by the end of the turn")
    return ", ".join(f"{c.method} {c.outcome}" for c in calls)


@V1(
    "client-capabilities",
    "without the fs and terminal capabilities the agent calls no fs/* or terminal/* method",
    "client methods",
    ("file-system.mdx#checking-support", "terminals.mdx#checking-support"),
    optional_scenarios=("tool_call", "terminal"),
    one_of_scenarios=True,
    turns=2,
)
async def client_capabilities(ctx: CheckContext) -> str | None:
    p = ctx.probe
    names = [name for name in ("tool_call", "terminal") if name in ctx.scenarios]
    write_readme(ctx.cwd)
    # First with the capabilities (this process advertises them): which scenarios make such calls at all?
    sid = await p.new_session(ctx.cwd)
    calling: list[str] = []
    for name in names:
        scenario = ctx.scenario(name)
        turn = await p.run_turn(sid, scenario.text(ctx.cwd), timeout=scenario.timeout)
        if _calls(p, turn.start, ""):
            calling.append(name)
    if not calling:
        raise NotApplicable(f"the {' and '.join(names)} scenario turns make no fs/* or terminal/* call at all")
    # Then the same turns on an agent process told that the client has neither capability.
    assert ctx.spawn is not None
    failure: Exception | None = None  # raised outside the extra process's task group, so it is not wrapped
    async with ctx.spawn() as bare:
        ctx.probe = bare
        try:
            await ctx.initialize(fs=False, terminal=False)
            bare_sid = await bare.new_session(ctx.cwd)
            for name in calling:
                scenario = ctx.scenario(name)
                turn = await bare.run_turn(bare_sid, scenario.text(ctx.cwd), timeout=scenario.timeout)
                for call in _calls(bare, turn.start, ""):
                    rule = "file-system.mdx" if call.method.startswith("fs/") else "terminals.mdx"
                    message = f"{call.method} called although the client advertised no such capability ({name})"
                    failure = Fail(f"{rule}#checking-support", message)
                    break
                if failure is not None:
                    break
        except (Fail, NotApplicable, LoginRequired) as exc:
            failure = exc
        finally:
            ctx.probe = p
    if failure is not None:
        raise failure
    return f"the {' and '.join(calling)} turns call no client method once the capabilities are off"
