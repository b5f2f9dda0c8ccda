"""Config options (v2): their shape on ``session/new`` and ``session/resume``, the current value of a select,
``session/set_config_option`` (the complete list back, the value applied, bad requests refused) and
``config_option_update``."""

from __future__ import annotations

from typing import Any

from acp_session.schema.types import (
    ResumeSessionRequest,
    SessionConfigOption,
    SetSessionConfigOptionBooleanRequest,
    SetSessionConfigOptionValueIdRequest,
    UnknownSetSessionConfigOptionRequest,
)

from ...outcomes import NotApplicable
from ...registry import CheckContext, require
from ...schema_strict import schema_problem
from ..common import HELLO, first_problem
from .base import V2

__all__ = [
    "config_current_value",
    "config_option_errors",
    "config_option_shapes",
    "config_option_update",
    "config_options",
    "config_set_value",
    "resume_config_options",
]


def current_values(listing: Any) -> dict[str, Any]:
    options = listing.get("configOptions") if isinstance(listing, dict) else None
    return {str(o.get("configId")): o.get("currentValue") for o in options or [] if isinstance(o, dict)}


def _select_values(option: dict[str, Any]) -> list[Any]:
    values: list[Any] = []
    for entry in option.get("options") or []:
        if isinstance(entry, dict) and ("group" in entry or "groupId" in entry):
            values += [o.get("value") for o in entry.get("options") or [] if isinstance(o, dict)]
        elif isinstance(entry, dict):
            values.append(entry.get("value"))
    return values


def shape_problems(options: Any, where: str) -> list[str]:
    """What makes ``options`` (a configOptions array) not the schema's, and a select's values empty or repeated."""
    if options is None:
        return [f"ACP2-032: {where}: configOptions is null; senders must use an array"]
    problems: list[str] = []
    for index, option in enumerate(options if isinstance(options, list) else [options]):
        problem = schema_problem(option, SessionConfigOption)
        if problem is not None:
            problems.append(f"schema:SessionConfigOption: {where}: configOptions[{index}]: {problem}")
            continue
        if option.get("type") != "select":
            continue
        entries = [e for e in option.get("options") or [] if isinstance(e, dict)]
        grouped = [e for e in entries if "group" in e or "groupId" in e]
        name = option.get("configId")
        if grouped and len(grouped) != len(entries):
            problems.append(f"schema:SessionConfigSelectOptions: {where}: option {name!r} mixes groups and values")
        if any(not g.get("options") for g in grouped):
            problems.append(f"ACP2-035: {where}: option {name!r} has an empty group")
        values = _select_values(option)
        if not values or len(values) != len(set(map(str, values))):
            problems.append(f"ACP2-037: {where}: option {name!r} has no or duplicate values: {values}")
    return problems


async def _options(ctx: CheckContext) -> tuple[str, list[dict[str, Any]]]:
    p = ctx.probe
    result = await p.call_ok("session/new", p.new_session_params(ctx.cwd), rule="session-setup.mdx")
    options = result.get("configOptions") if isinstance(result, dict) else None
    if not options or not isinstance(options, list):
        raise NotApplicable("no config options advertised")
    return result["sessionId"], [o for o in options if isinstance(o, dict)]


def _select(options: list[dict[str, Any]]) -> dict[str, Any]:
    found = next((o for o in options if o.get("type") == "select"), None)
    if found is None:
        raise NotApplicable("no select config option")
    return found


@V2(
    "config-option-shapes",
    "the config options of session/new are in the schema's shape, each select with distinct values",
    "config and modes",
    ("schema:SessionConfigOption", "ACP2-032", "ACP2-035", "ACP2-037"),
    prompts=False,
)
async def config_option_shapes(ctx: CheckContext) -> str | None:
    p = ctx.probe
    result = await p.call_ok("session/new", p.new_session_params(ctx.cwd), rule="session-setup.mdx")
    if not isinstance(result, dict) or "configOptions" not in result or result["configOptions"] == []:
        raise NotApplicable("no config options advertised")
    first_problem(shape_problems(result["configOptions"], "session/new"))
    return None


@V2(
    "config-current-value",
    "a select config option's currentValue is one of its values",
    "config and modes",
    ("ACP2-036",),
    prompts=False,
)
async def config_current_value(ctx: CheckContext) -> str | None:
    _sid, options = await _options(ctx)
    selects = [o for o in options if o.get("type") == "select"]
    if not selects:
        raise NotApplicable("no select config option")
    for option in selects:
        values = _select_values(option)
        require(
            option.get("currentValue") in values,
            "ACP2-036",
            f"option {option.get('configId')!r}: currentValue {option.get('currentValue')!r} not in {values}",
        )
    return None


async def _set(ctx: CheckContext) -> tuple[dict[str, Any], str, str, dict[str, Any]]:
    """Set a select option to another of its values: (values before, the option, the value, the answer)."""
    sid, options = await _options(ctx)
    select = _select(options)
    config_id = str(select["configId"])
    values = _select_values(select)
    target = str(next((v for v in values if v != select.get("currentValue")), select.get("currentValue")))
    answer = await ctx.probe.call_ok(
        "session/set_config_option",
        SetSessionConfigOptionValueIdRequest(session_id=sid, config_id=config_id, value=target),
        rule="ACP2-080",
    )
    return current_values({"configOptions": options}), config_id, target, answer if isinstance(answer, dict) else {}


@V2(
    "config-options",
    "session/set_config_option answers with the complete list of config options",
    "config and modes",
    ("session-config-options.mdx#from-the-client", "schema:SetSessionConfigOptionResponse"),
    prompts=False,
)
async def config_options(ctx: CheckContext) -> str | None:
    before, _config_id, _target, answer = await _set(ctx)
    after = current_values(answer)
    missing = sorted(set(before) - set(after))
    require(not missing, "session-config-options.mdx#from-the-client", f"the answer leaves out {missing}")
    return None


@V2(
    "config-set-value",
    "session/set_config_option applies a valid value: the answer lists it as current",
    "config and modes",
    ("ACP2-080",),
    prompts=False,
)
async def config_set_value(ctx: CheckContext) -> str | None:
    _before, config_id, target, answer = await _set(ctx)
    after = current_values(answer)
    if config_id not in after:
        raise NotApplicable(f"the answer does not list {config_id} (config-options' subject)")
    require(
        after[config_id] == target,
        "ACP2-080",
        f"after setting {config_id}={target!r} the returned list says {after[config_id]!r}",
    )
    return None


@V2(
    "config-option-errors",
    "session/set_config_option rejects unknown ids, values and value types with -32602, changing nothing",
    "config and modes",
    ("ACP2-081", "ACP2-082"),
    prompts=False,
)
async def config_option_errors(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid, options = await _options(ctx)
    resumed = await p.call("session/resume", ResumeSessionRequest(session_id=sid, cwd=ctx.cwd), rule="ACP2-081")
    before = current_values(resumed.result) if resumed.error is None else current_values({"configOptions": options})

    async def rejected(request: Any, rule: str, what: str) -> None:
        frame = await p.call("session/set_config_option", request, rule=rule)
        require(frame.error_code == -32602, rule, f"{what}: expected -32602, got {frame.message}")

    await rejected(
        SetSessionConfigOptionValueIdRequest(session_id=sid, config_id="_acp_conformance_unknown", value="x"),
        "ACP2-081",
        "unknown configId",
    )
    await rejected(
        UnknownSetSessionConfigOptionRequest(
            {"type": "_acp_conformance_type", "sessionId": sid, "configId": options[0].get("configId"), "value": 1}
        ),
        "ACP2-082",
        "unsupported value type",
    )
    select = next((o for o in options if o.get("type") == "select"), None)
    if select is not None:
        config_id = select["configId"]
        await rejected(
            SetSessionConfigOptionValueIdRequest(
                session_id=sid, config_id=config_id, value="_acp_conformance_not_a_value"
            ),
            "ACP2-081",
            "a value the option does not offer",
        )
        await rejected(
            SetSessionConfigOptionBooleanRequest(session_id=sid, config_id=config_id, value=True),
            "ACP2-081",
            "a boolean for a select option",
        )
    resumed = await p.call("session/resume", ResumeSessionRequest(session_id=sid, cwd=ctx.cwd), rule="ACP2-081")
    after = current_values(resumed.result) if resumed.error is None else before
    changed = sorted(k for k in before if k in after and before[k] != after[k])
    require(not changed, "ACP2-081", f"rejected requests changed {changed}")
    return None


@V2(
    "resume-config-options",
    "the config options session/resume answers with are in the schema's shape",
    "config and modes",
    ("schema:ResumeSessionResponse", "schema:SessionConfigOption"),
    prompts=False,
)
async def resume_config_options(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid = await p.new_session(ctx.cwd)
    resumed = await p.call("session/resume", ResumeSessionRequest(session_id=sid, cwd=ctx.cwd), rule="ACP2-039")
    if resumed.error is not None:
        raise NotApplicable(f"session/resume failed ({resumed.error}): resume's subject")
    answer = resumed.result
    if not isinstance(answer, dict) or "configOptions" not in answer or answer["configOptions"] == []:
        raise NotApplicable("session/resume answers with no config options")
    first_problem(shape_problems(answer["configOptions"], "session/resume"))
    return None


@V2(
    "config-option-update",
    "a config_option_update lists every config option, not only the changed ones",
    "config and modes",
    ("session-config-options.mdx", "schema:ConfigOptionUpdate"),
)
async def config_option_update(ctx: CheckContext) -> str | None:
    p = ctx.probe
    sid, options = await _options(ctx)
    known = {str(o.get("configId")) for o in options}
    turn = await p.run_turn(sid, HELLO)
    await p.barrier()
    updates = p.find(p.is_update(sid, "config_option_update"), turn.start)
    if not updates:
        raise NotApplicable("no config_option_update came during a turn")
    for frame in updates:
        listed = set(current_values(frame.update))
        missing = sorted(known - listed)
        require(not missing, "session-config-options.mdx", f"line {frame.index + 1}: the update leaves out {missing}")
        known |= listed
    return f"{len(updates)} update(s)"
