"""Client checks of what a client offers and how it answers by its own settings: the ``initialize`` it sends
has only its version's fields at the root, and a permission policy it was given is what answers the agent.

Sans-IO like ``judge.py``, which lists these checks with the others (this module imports only ``runs``).
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from acp_session.schema import types as v2
from acp_session.schema import v1

from .policy import NO_POLICY, POLICY, decide, parse_policy
from .runs import Line, Run

__all__ = ["check_offer_shape", "check_permission_policy"]

Result = tuple[str, str]
_NOT_TESTED = "not tested"  # judge.NOT_TESTED
_V2_FIELDS = frozenset(f.encode_name for f in msgspec.structs.fields(v2.InitializeRequest))
_V1_FIELDS = frozenset(f.encode_name for f in msgspec.structs.fields(v1.InitializeRequest))


def check_offer_shape(runs: list[Run]) -> Result:
    """Every ``initialize`` carries at its root only the fields of the offered version's ``InitializeRequest``
    (extensibility.mdx: no custom field at the root of a specified type; v1's ``clientCapabilities`` beside a v2
    offer is one)."""
    judged = 0
    for run in runs:
        for line in run.client_messages():
            m = line.message or {}
            params = m.get("params")
            if m.get("method") != "initialize" or not isinstance(params, dict):
                continue
            offered = params.get("protocolVersion")
            version = 2 if isinstance(offered, int) and offered >= 2 else 1
            unknown = sorted(set(params) - (_V2_FIELDS if version == 2 else _V1_FIELDS))
            judged += 1
            if unknown:
                return "fail", (
                    f"{run.label}: extensibility.mdx: an initialize offering v{offered} has {', '.join(unknown)} at "
                    f"its root, which v{version}'s InitializeRequest does not define (custom data goes in _meta): "
                    f"{line.raw[:200]}"
                )
    if not judged:
        return _NOT_TESTED, "the client sent no initialize to judge"
    return "pass", f"{judged} initialize request(s)"


def _tool_call_of(params: dict[str, Any]) -> dict[str, Any]:
    subject = params.get("subject")
    call = subject.get("toolCall") if isinstance(subject, dict) else params.get("toolCall")
    return call if isinstance(call, dict) else {}


def _kinds(run: Run) -> dict[Any, Any]:
    """Tool call id -> kind, as the scripted agent reported them."""
    kinds: dict[Any, Any] = {}
    for line in run.lines:
        update = ((line.message or {}).get("params") or {}).get("update") if line.direction == "out" else None
        if isinstance(update, dict) and update.get("sessionUpdate") in ("tool_call", "tool_call_update"):
            kinds.setdefault(update.get("toolCallId"), update.get("kind"))
    return kinds


def _approved(answer: dict[str, Any], request: Line) -> bool:
    result = answer.get("result")
    outcome = result.get("outcome") if isinstance(result, dict) else None
    if not isinstance(outcome, dict) or outcome.get("outcome") != "selected":
        return False
    options = ((request.message or {}).get("params") or {}).get("options") or []
    kinds = {o.get("optionId"): o.get("kind") for o in options if isinstance(o, dict)}
    return str(kinds.get(outcome.get("optionId"), "")).startswith("allow")


def check_permission_policy(runs: list[Run]) -> Result:
    """In the permission-policy scenario every permission request is answered as the policy given to the driver
    says: an allow option where it allows the tool kind, never one where it denies it."""
    mine = [run for run in runs if run.scenario == "permission-policy"]
    if not mine:
        return "n/a", "the permission-policy scenario did not run"
    declined = [run for run in mine if run.exit_code == NO_POLICY and not run.client_messages()]
    if len(declined) == len(mine):
        return "n/a", f"the driver applies no permission policy (it exited {NO_POLICY}, as the driver contract says)"
    usable = {run.version for run in runs if run.scenario == "basic" and "prompted" in run.events}
    judged = [run for run in mine if run not in declined and (run.version in usable or not usable)]
    if not any("prompted" in run.events for run in judged):
        how = judged[0].how_it_ended() if judged else "no run at a version the client takes"
        return _NOT_TESTED, f"the client never prompted in the permission-policy scenario: {how}"
    rules = parse_policy(POLICY)
    count = 0
    for run in judged:
        kinds = _kinds(run)
        answers = {
            line.message.get("id"): line.message
            for line in run.client_messages()
            if line.message and "method" not in line.message
        }
        for request_id, request in run.agent_requests().items():
            params = (request.message or {}).get("params") or {}
            if (request.message or {}).get("method") != "session/request_permission":
                continue
            call = _tool_call_of(params)
            kind = kinds.get(call.get("toolCallId")) or call.get("kind")
            expected = decide(rules, kind)
            answer = answers.get(request_id)
            if answer is None:
                return (
                    "fail",
                    f"{run.label}: the permission request about {kind} (id {request_id!r}) was never answered",
                )
            count += 1
            approved, said = _approved(answer, request), json.dumps(answer)[:200]
            if expected == "allow" and not approved:
                return "fail", f"{run.label}: the policy {POLICY!r} allows {kind}, but the client answered {said}"
            if expected == "deny" and approved:
                return "fail", f"{run.label}: the policy {POLICY!r} denies {kind}, but the client approved: {said}"
    return "pass", f"{count} permission requests answered as {POLICY!r} says"
