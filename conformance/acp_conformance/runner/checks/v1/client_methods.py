"""Client methods (v1): the agent's ``fs/*`` and ``terminal/*`` calls, which the runner answers inside the check's
sandbox directory through the library's providers, judged for their shape and for the capabilities offered."""

from __future__ import annotations

from ...client_calls import ELICITATION, ClientCall
from ...outcomes import AUTH_REQUIRED, Fail, LoginRequired, NotApplicable
from ...probe import Probe
from ...registry import CheckContext, require
from ..common import first_problem, write_readme
from .base import V1

__all__ = ["client_fs", "client_terminals", "elicitation_gated", "fs_gated", "terminal_gated"]


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


async def _calls_in_turn(ctx: CheckContext, name: str, prefix: str) -> list[ClientCall]:
    """Run scenario ``name`` in a new session of the check's current process: the agent's calls of ``prefix``.

    The calls are the observation, even when the turn then fails (an agent whose unadvertised call was refused
    may give up on the turn); a turn that fails without any such call fails as a refused prompt."""
    p = ctx.probe
    scenario = ctx.scenario(name)
    sid = await p.new_session(ctx.cwd)
    start = p.mark
    rid = await p.prompt(sid, scenario.text(ctx.cwd))
    answer = await p.response(rid, scenario.timeout, start)
    calls = _calls(p, start, prefix)
    if calls:
        return calls
    if answer is None:
        raise Fail(
            "prompt-turn.mdx#4-check-for-completion", f"no response to session/prompt within {scenario.timeout:g}s"
        )
    if answer.error_code == AUTH_REQUIRED:
        raise LoginRequired("session/prompt", answer.error)
    require(answer.error is None, "ACP1-012", f"the {scenario.describe()} prompt was rejected: {answer.error}")
    return calls


async def _gated(ctx: CheckContext, name: str, prefix: str, rule: str, **offer: bool) -> str:
    """The scenario makes ``prefix`` calls on this process (which offers the capability); on another agent process
    told the client does not have it, the same turn must make none."""
    write_readme(ctx.cwd)
    if not await _calls_in_turn(ctx, name, prefix):
        raise NotApplicable(f"the {ctx.scenario(name).describe()} scenario makes no {prefix}* call even when offered")
    assert ctx.spawn is not None
    p = ctx.probe
    failure: Exception | None = None  # raised outside the extra process's task group, so it is not wrapped
    async with ctx.spawn() as bare:
        ctx.probe = bare
        try:
            await ctx.initialize(**offer)
            calls = await _calls_in_turn(ctx, name, prefix)
            if calls:
                failure = Fail(rule, f"{calls[0].method} called although the client advertised no such capability")
        except (Fail, NotApplicable, LoginRequired) as exc:
            failure = exc
        finally:
            ctx.probe = p
    if failure is not None:
        raise failure
    return f"the {name} turn calls no {prefix}* method once the capability is off"


@V1(
    "fs-gated",
    "without the fs capability the agent calls no fs/* method",
    "client methods",
    ("file-system.mdx#checking-support",),
    scenarios=("tool_call",),
    turns=2,
)
async def fs_gated(ctx: CheckContext) -> str | None:
    return await _gated(ctx, "tool_call", "fs/", "file-system.mdx#checking-support", fs=False)


@V1(
    "terminal-gated",
    "without the terminal capability the agent calls no terminal/* method",
    "client methods",
    ("terminals.mdx#checking-support",),
    scenarios=("terminal",),
    turns=2,
)
async def terminal_gated(ctx: CheckContext) -> str | None:
    return await _gated(ctx, "terminal", "terminal/", "terminals.mdx#checking-support", terminal=False)


@V1(
    "elicitation-gated",
    "without an elicitation capability the agent does not call elicitation/create",
    "client methods",
    ("elicitation.mdx#checking-support", "schema:ClientCapabilities"),
    scenarios=("elicitation",),
    turns=2,
)
async def elicitation_gated(ctx: CheckContext) -> str | None:
    rule = "elicitation.mdx#checking-support"
    # The runner's processes offer no elicitation: the scenario's turn must not elicit here.
    unasked = await _calls_in_turn(ctx, "elicitation", ELICITATION)
    if unasked:
        raise Fail(rule, f"{ELICITATION} called although the client advertised no elicitation mode")
    # Was there anything to gate? The same turn on a process that offers form elicitation.
    assert ctx.spawn is not None
    p = ctx.probe
    asked: list[ClientCall] = []
    failure: Exception | None = None  # raised outside the extra process's task group, so it is not wrapped
    async with ctx.spawn() as offered:
        ctx.probe = offered
        try:
            await ctx.initialize(elicitation=True)
            asked = await _calls_in_turn(ctx, "elicitation", ELICITATION)
        except (Fail, NotApplicable, LoginRequired) as exc:
            failure = exc
        finally:
            ctx.probe = p
    if failure is not None:
        raise failure
    if not asked:
        raise NotApplicable(
            f"the {ctx.scenario('elicitation').describe()} scenario does not elicit even when form elicitation is "
            "offered: nothing gated to observe"
        )
    return "the elicitation turn elicits only when the client offers it"
