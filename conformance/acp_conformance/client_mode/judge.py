"""Judge an ACP client from the logs of the scripted agent's runs (one run per scenario and protocol version).

Sans-IO: each check reads the runs (``runs.Run``) it concerns and returns pass, fail, n/a or not tested, with a
message that names the run (scenario and agent version) and, where one applies, the rule.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..runner.tiers import Tier
from .judge_offer import check_offer_shape, check_permission_policy
from .runs import Line, Run, versioned_problems

__all__ = ["CLIENT_CHECKS", "NOT_TESTED", "ClientCheck", "Run", "judge_runs", "unchecked"]


Result = tuple[str, str]  # (status, message): "pass" / "fail" / "n/a" / "not tested"
NOT_TESTED = "not tested"  # the scenario ran, but the client never got to the point the check judges


def _usable_versions(runs: list[Run]) -> set[int]:
    """The agent versions at which the client manages a plain turn's prompt (the basic scenario): runs at other
    versions fail client-negotiation / client-prompt-turn once, not every other check again."""
    basics = [run for run in runs if run.scenario == "basic"]
    if not basics:  # the basic scenario was not selected: judge every run
        return {run.version for run in runs}
    return {run.version for run in basics if "prompted" in run.events}


def _judged(runs: list[Run], scenario: str) -> list[Run]:
    usable = _usable_versions(runs)
    return [run for run in runs if run.scenario == scenario and run.version in usable]


def _unreached(runs: list[Run], scenario: str) -> Result | None:
    """NOT_TESTED when no run of ``scenario`` got as far as the prompt; n/a when none ran at all."""
    if not any(run.scenario == scenario for run in runs):
        return "n/a", f"the {scenario} scenario did not run"
    mine = _judged(runs, scenario) or [run for run in runs if run.scenario == scenario]
    if not mine:
        return "n/a", f"the {scenario} scenario did not run"
    if not any("prompted" in run.events for run in mine):
        return NOT_TESTED, f"the client never prompted in the {scenario} scenario: {mine[0].how_it_ended()}"
    return None


def _silent(runs: list[Run]) -> Result | None:
    """NOT_TESTED when the client sent the scripted agent nothing in any run (did it start the agent at all?)."""
    if any(run.client_messages() for run in runs):
        return None
    started = any("started" in run.events for run in runs)
    why = "it started the scripted agent but sent it nothing" if started else "it never started the scripted agent"
    return NOT_TESTED, f"no client message to judge: {why} (the agent's command is appended to the client's)"


def check_schema(runs: list[Run]) -> Result:
    silent = _silent(runs)
    if silent is not None:
        return silent
    problems = [p for run in runs for p in versioned_problems(run)[0]]
    return ("fail", problems[0]) if problems else ("pass", f"{sum(len(r.client_messages()) for r in runs)} messages")


def check_negotiation(runs: list[Run]) -> Result:
    silent = _silent(runs)
    if silent is not None:
        return silent
    for run in runs:
        first = next(iter(run.client_messages()), None)
        if first is None:
            continue
        m = first.message or {}
        if m.get("method") != "initialize":
            return "fail", f"{run.label}: the first message is {m.get('method')!r}, not initialize"
        offered = (m.get("params") or {}).get("protocolVersion")
        if not isinstance(offered, int) or isinstance(offered, bool) or offered < 1:
            return "fail", f"{run.label}: initialize offers protocolVersion {offered!r}, not a version number"
        if run.scenario == "basic" and run.declined_version():
            return "fail", (
                f"{run.label}: offered v{offered}, the agent answered v{run.negotiated}, and the client did not "
                "go on to prompt (it should take a lower version it supports, or offer it)"
            )
        problems = versioned_problems(run)[1]
        if problems:
            return "fail", problems[0]
    return "pass", ""


def check_prompt_turn(runs: list[Run]) -> Result:
    """The plain turn completes wherever the client prompts; a version it does not take at all is
    client-negotiation's finding, unless it prompts at no version."""
    basics = [run for run in runs if run.scenario == "basic"]
    if not basics:
        return "n/a", "the basic scenario did not run"
    judged = [run for run in basics if not run.declined_version()] or basics
    failures = [run.how_it_ended() for run in judged if not run.completed()]
    return ("fail", "; ".join(failures)) if failures else ("pass", "")


def check_answers_requests(runs: list[Run]) -> Result:
    unreached = _unreached(runs, "permission")
    if unreached is not None:
        return unreached
    for run in runs:
        if run.scenario == "cancel-pending":
            continue  # its held request is client-cancels-pending-permission's to judge
        answered = {
            line.message.get("id")
            for line in run.client_messages()
            if line.message and "method" not in line.message and ("result" in line.message or "error" in line.message)
        }
        for request_id, line in run.agent_requests().items():
            if request_id not in answered:
                method = line.message["method"] if line.message else "?"
                return "fail", f"{run.label}: the agent's {method} (id {request_id!r}) was never answered"
    return "pass", ""


def _approved(run: Run, result: Any, request: Line) -> bool:
    outcome = result.get("outcome") if isinstance(result, dict) else None
    if not isinstance(outcome, dict) or outcome.get("outcome") != "selected":
        return False
    options = (request.message or {}).get("params", {}).get("options", [])
    kinds = {o.get("optionId"): o.get("kind") for o in options if isinstance(o, dict)}
    return str(kinds.get(outcome.get("optionId"), "")).startswith("allow")


def _never_cancelled(run: Run) -> str:
    """Why a run that prompted is not judged by a cancel check: the point it judges comes after session/cancel."""
    return (
        f"{run.label}: the client never sent session/cancel, so the point this check judges was never reached "
        "(its driver has no way to cancel the turn, or did not)"
    )


def check_no_approval_after_cancel(runs: list[Run]) -> Result:
    unreached = _unreached(runs, "cancel")
    if unreached is not None:
        return unreached
    judged = False
    why_not = "no cancel run got as far as session/cancel"
    for run in _judged(runs, "cancel"):
        cancel_at = next(
            (line.t for line in run.client_messages() if (line.message or {}).get("method") == "session/cancel"),
            None,
        )
        if cancel_at is None:
            if "prompted" in run.events:
                why_not = _never_cancelled(run)
            continue
        judged = True
        requests = run.agent_requests()
        for line in run.client_messages():
            m = line.message or {}
            request = requests.get(m.get("id")) if "method" not in m else None
            if request is None or (request.message or {}).get("method") != "session/request_permission":
                continue
            if line.t >= cancel_at and _approved(run, m.get("result"), request):
                return "fail", f"{run.label}: approved a permission after sending session/cancel: {line.raw[:200]}"
    return ("pass", "") if judged else (NOT_TESTED, why_not)


def check_cancels_pending_permission(runs: list[Run]) -> Result:
    """A permission request still pending when the client cancels the turn is answered ``cancelled`` (v2 also
    accepts ``-32800``, the answer to the agent's ``$/cancel_request``)."""
    unreached = _unreached(runs, "cancel-pending")
    if unreached is not None:
        return unreached
    judged = False
    why_not = "no cancel-pending run got as far as session/cancel"
    for run in _judged(runs, "cancel-pending"):
        cancel = next(
            (ln for ln in run.client_messages() if (ln.message or {}).get("method") == "session/cancel"), None
        )
        if cancel is None:
            if "prompted" in run.events:
                why_not = _never_cancelled(run)
            continue
        request_id = next(
            i
            for i, ln in run.agent_requests().items()
            if (ln.message or {}).get("method") == "session/request_permission"
        )
        answer = next(
            (
                ln
                for ln in run.client_messages()
                if "method" not in (ln.message or {}) and (ln.message or {}).get("id") == request_id
            ),
            None,
        )
        if answer is None:
            return "fail", f"{run.label}: ACP1-025: the pending permission request was never answered after the cancel"
        m = answer.message or {}
        result = m.get("result")
        outcome = result.get("outcome") if isinstance(result, dict) else None
        cancelled = isinstance(outcome, dict) and outcome.get("outcome") == "cancelled"
        withdrawn = run.negotiated == 2 and (m.get("error") or {}).get("code") == -32800
        if cancelled or withdrawn:
            judged = True
            continue  # before or after the session/cancel line: either way the request ends cancelled
        if answer.t < cancel.t:
            # Nothing was pending at the cancel: the driver could not leave the request open (auto-approval).
            why_not = (
                f"{run.label}: the permission request was answered before the cancel, so none was pending when it "
                f"came (the driver must leave it unanswered): {answer.raw[:200]}"
            )
            continue
        return "fail", f"{run.label}: ACP1-025: the pending permission request was answered {answer.raw[:200]}"
    return ("pass", "") if judged else (NOT_TESTED, why_not)


def check_gates_capabilities(runs: list[Run]) -> Result:
    """An fs/* or terminal/* call the client did not advertise is answered with an error. The scripted agent
    calls all three methods whatever the client advertised, so each one the client leaves out is exercised; a
    client that advertises all three leaves nothing to gate: NOT_TESTED, never a PASS that observed nothing."""
    unreached = _unreached(runs, "client-methods")
    if unreached is not None:
        return unreached
    judged = False
    why_not: str | None = None  # why no call exercised the gate, once a v1 run was seen
    for run in _judged(runs, "client-methods"):
        if run.negotiated != 1:
            continue
        why_not = why_not or f"{run.label}: no call of a method the client did not advertise was answered"
        inits = [line.message for line in run.client_messages() if (line.message or {}).get("method") == "initialize"]
        init = inits[-1] if inits else None  # the one in effect: a client may offer v1 again after a v2 offer
        caps = ((init or {}).get("params") or {}).get("clientCapabilities") or {}
        fs = caps.get("fs") or {}
        advertised = {
            "fs/read_text_file": fs.get("readTextFile") is True,
            "fs/write_text_file": fs.get("writeTextFile") is True,
            "terminal/create": caps.get("terminal") is True,
        }
        answers = {
            line.message.get("id"): line.message
            for line in run.client_messages()
            if line.message and "method" not in line.message
        }
        if all(advertised.values()):
            why_not = (
                f"{run.label}: the client advertised fs.readTextFile, fs.writeTextFile and terminal, so the agent's "
                "calls of them had nothing to gate (no call of a method it did not advertise)"
            )
        for request_id, request in run.agent_requests().items():
            method = (request.message or {}).get("method")
            answer = answers.get(request_id)
            if method not in advertised or advertised[method] or answer is None:
                continue  # only a call the client did not advertise, and answered, exercises the gate
            judged = True
            if "error" not in answer:
                return (
                    "fail",
                    f"{run.label}: answered {method} with a result, not an error, without advertising it: "
                    f"{json.dumps(answer)[:200]}",
                )
    if judged:
        return "pass", ""
    return (NOT_TESTED, why_not) if why_not is not None else ("n/a", "no protocol v1 client-methods run")


def _survives(scenario: str) -> Callable[[list[Run]], Result]:
    def check(runs: list[Run]) -> Result:
        if not any(run.scenario == scenario for run in runs):
            return "n/a", f"the {scenario} scenario did not run"
        mine = _judged(runs, scenario)
        if not mine:
            return NOT_TESTED, "the client manages no plain turn at the versions this scenario ran with"
        failures = [run.how_it_ended() for run in mine if not run.completed()]
        if failures:
            return "fail", "; ".join(failures)
        logged = [f"{run.label}: survived, but logged a traceback" for run in mine if run.crashed()]
        return "pass", "; ".join(logged)

    return check


def check_unknown_variants(runs: list[Run]) -> Result:
    """Survived, and an unknown state_update state was not taken for the turn's end (the client did not close
    the session or its pipe before the real idle)."""
    survived = _survives("unknown-variants")(runs)
    if survived[0] != "pass":
        return survived
    for run in _judged(runs, "unknown-variants"):
        ended = run.events.get("turn-ended", {}).get("t")
        closes = [ln.t for ln in run.client_messages() if (ln.message or {}).get("method") == "session/close"]
        eof = run.events.get("eof", {}).get("t")
        early = [t for t in [*closes, *([eof] if eof is not None else [])] if ended is None or t < ended]
        if early:
            return "fail", f"{run.label}: ACP2-058: the client left before the turn's idle (an unknown state ended it)"
    return survived


def check_agent_dies(runs: list[Run]) -> Result:
    if not any(run.scenario == "agent-dies" for run in runs):
        return "n/a", "the agent-dies scenario did not run"
    mine = _judged(runs, "agent-dies")
    if not mine:
        return NOT_TESTED, "the client manages no plain turn at the versions this scenario ran with"
    for run in mine:
        if run.exit_code is None:
            return "fail", f"{run.label}: the client did not exit after its agent died mid-turn"
        if run.crashed():
            return "fail", f"{run.label}: a traceback on stderr: {' | '.join(run.stderr_tail[-3:])}"
    return "pass", ""


def check_closes_sessions(runs: list[Run]) -> Result:
    unreached = _unreached(runs, "basic")
    if unreached is not None:
        return unreached
    failures = [
        f"{run.label}: the client left without session/close for the session it opened"
        for run in runs
        if run.scenario == "basic"
        and "prompted" in run.events
        and not any((line.message or {}).get("method") == "session/close" for line in run.client_messages())
    ]
    return ("fail", "; ".join(failures)) if failures else ("pass", "")


def _advertised_auth(run: Run) -> dict[Any, Any]:
    """methodId -> type of the auth methods the scripted agent's initialize answer listed."""
    for line in run.lines:
        result = (line.message or {}).get("result") if line.direction == "out" else None
        if isinstance(result, dict) and "protocolVersion" in result:
            methods = result.get("authMethods") or []
            key = "methodId" if run.negotiated == 2 else "id"
            return {m.get(key): m.get("type", "agent") for m in methods if isinstance(m, dict)}
    return {}


def check_login_gating(runs: list[Run]) -> Result:
    """auth/login (v2) or authenticate (v1) only with an advertised method the protocol can log in with."""
    for run in runs:
        advertised = _advertised_auth(run)
        for line in run.client_messages():
            m = line.message or {}
            if m.get("method") not in ("auth/login", "authenticate"):
                continue
            method_id = (m.get("params") or {}).get("methodId")
            kind = advertised.get(method_id)
            if not advertised:
                return "fail", f"{run.label}: ACP2-062: {m['method']} although the agent advertised no auth method"
            if kind is None:
                return "fail", f"{run.label}: {m['method']} with {method_id!r}, which the agent did not advertise"
            if kind == "terminal":
                return "fail", f"{run.label}: ACP2-029/ACP1-014: {m['method']} with the terminal method {method_id!r}"
            if run.negotiated == 2 and kind != "agent":
                return "fail", f"{run.label}: ACP2-061: auth/login with {method_id!r} of type {kind!r} (not agent)"
    return "pass", ""


@dataclass(frozen=True)
class ClientCheck:
    id: str
    title: str
    tier: Tier
    rules: tuple[str, ...]
    fn: Callable[[list[Run]], Result]
    judges_unchecked: bool = False  # it judges what a client sent even when no run completed a handshake


M, C, A = Tier.MANDATORY, Tier.CAPABILITY, Tier.ADVISORY
CLIENT_CHECKS: list[ClientCheck] = [
    ClientCheck(
        "client-schema",
        "every message matches the negotiated version's schema",
        M,
        ("schema:ClientRequest", "schema:ClientResponse", "schema:ClientNotification", "ACP2-085"),
        check_schema,
        judges_unchecked=True,
    ),
    ClientCheck(
        "client-negotiation",
        "initialize comes first; the client takes the version the agent answers",
        M,
        ("initialization.mdx#version-negotiation",),
        check_negotiation,
        judges_unchecked=True,
    ),
    ClientCheck(
        "client-prompt-turn",
        "a plain turn: initialize, session/new, session/prompt, a clean exit",
        M,
        ("ACP2-085", "ACP1-012"),
        check_prompt_turn,
    ),
    ClientCheck(
        "client-login-gating",
        "auth/login (authenticate) only with an advertised method that logs in over the protocol",
        M,
        ("ACP2-061", "ACP2-062", "ACP2-029", "ACP1-014"),
        check_login_gating,
    ),
    ClientCheck(
        "client-answers-requests",
        "every agent request gets a result or an error (unknown ones too)",
        M,
        ("ACP2-005", "ACP1-004", "extensibility.mdx"),
        check_answers_requests,
    ),
    ClientCheck(
        "client-no-approval-after-cancel",
        "no permission is approved after the client sent session/cancel",
        M,
        ("ACP1-002", "ACP1-025", "cancellation.mdx"),
        check_no_approval_after_cancel,
    ),
    ClientCheck(
        "client-cancels-pending-permission",
        "a permission request still pending when the client cancels is answered cancelled",
        M,
        ("ACP1-025", "ACP1-002", "ACP2-001"),
        check_cancels_pending_permission,
    ),
    ClientCheck(
        "client-gates-capabilities",
        "fs/* and terminal/* calls are refused unless advertised (v1)",
        C,
        ("file-system.mdx#checking-support", "terminals.mdx#checking-support"),
        check_gates_capabilities,
    ),
    ClientCheck(
        "client-early-update",
        "an update before the session/new answer does not stall the client",
        M,
        ("ACP2-031", "session-setup.mdx"),
        _survives("early-update"),
    ),
    ClientCheck(
        "client-unknown-variants",
        "unknown update kinds, enum values, blocks and auth methods are survived",
        M,
        ("ACP2-058", "ACP2-034", "ACP1-016", "extensibility.mdx"),
        check_unknown_variants,
    ),
    ClientCheck("client-meta", "_meta on every object is ignored", M, ("ACP2-007", "ACP1-005"), _survives("meta")),
    ClientCheck(
        "client-long-line", "a 2 MiB message line is read", A, ("transports.mdx#stdio",), _survives("long-line")
    ),
    ClientCheck(
        "client-agent-dies",
        "an agent that dies mid-turn ends the client's wait without a crash",
        A,
        ("transports.mdx#stdio",),
        check_agent_dies,
    ),
    ClientCheck(
        "client-closes-sessions",
        "the client closes the session it opened before it leaves",
        A,
        ("session-setup.mdx#closing-sessions", "ACP2-074"),
        check_closes_sessions,
    ),
    ClientCheck(
        "client-offer-shape",
        "initialize carries at its root only the offered version's fields (v1's none beside a v2 offer)",
        M,
        ("extensibility.mdx", "schema:InitializeRequest"),
        check_offer_shape,
    ),
    ClientCheck(
        "client-permission-policy",
        "every permission request is answered as the policy the driver was given says",
        C,
        ("tool-calls.mdx#requesting-permission", "schema:RequestPermissionOutcome"),
        check_permission_policy,
    ),
]


def unchecked(runs: list[Run]) -> str | None:
    """Why the client could not be checked at all (None: it could): in no run did it complete a handshake, an
    ``initialize`` the scripted agent answered. Agent mode's "not checked": the subject never got to the
    protocol, so a check that passes would only say it did nothing wrong by doing nothing."""
    if not runs or any(run.negotiated is not None for run in runs):
        return None
    first = runs[0]
    if not any("started" in run.events for run in runs):
        why = (
            "the client never started the scripted agent, whose command is appended to the client's command line "
            "(is it a driver that follows the driver contract? acp-conformance client --help lists the shipped ones)"
        )
    elif not any(run.client_messages() for run in runs):
        why = "the client started the scripted agent but sent it nothing"
    else:
        why = "the client sent the scripted agent no initialize"
    return f"{why}; {first.how_it_ended()}"


def judge_runs(runs: list[Run]) -> list[tuple[ClientCheck, str, str]]:
    """Every check's (check, status, message) over the runs. When no run completed a handshake (``unchecked``),
    every check is NOT_TESTED with that reason, except a failure of one that judges what the client did send."""
    problem = unchecked(runs)
    results = [(c, *c.fn(runs)) for c in CLIENT_CHECKS]
    if problem is None:
        return results
    return [
        (c, status, message) if c.judges_unchecked and status == "fail" else (c, NOT_TESTED, f"not run: {problem}")
        for c, status, message in results
    ]
