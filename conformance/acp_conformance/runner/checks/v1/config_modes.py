"""Config options and modes (v1): the state ``session/new`` reports (modes, option values, no unadvertised boolean
option), ``session/set_mode`` and ``session/set_config_option``."""

from __future__ import annotations

from typing import Any

from acp_session.schema import v1

from ...outcomes import Fail, NotApplicable
from ...registry import CheckContext, require
from .base import V1, schema_problem

__all__ = ["boolean_options", "config_options", "config_values", "modes_state", "session_modes"]


async def _new(ctx: CheckContext) -> dict[str, Any]:
    p = ctx.probe
    result = await p.call_ok("session/new", p.new_session_params(ctx.cwd), rule="ACP1-012")
    return result if isinstance(result, dict) else {}


def _options(result: dict[str, Any]) -> list[dict[str, Any]]:
    options = result.get("configOptions")
    return [o for o in options if isinstance(o, dict)] if isinstance(options, list) else []


def _select_values(option: dict[str, Any]) -> list[Any]:
    """The values of a select option, listed flat or in groups."""
    values: list[Any] = []
    for entry in option.get("options") or []:
        if isinstance(entry, dict) and isinstance(entry.get("options"), list):
            values += [o.get("value") for o in entry["options"] if isinstance(o, dict)]
        elif isinstance(entry, dict):
            values.append(entry.get("value"))
    return values


@V1(
    "modes-state",
    "the modes session/new reports (if any) match the v1 schema; the current mode is one of them",
    "config and modes",
    ("session-modes.mdx", "schema:SessionModeState"),
    prompts=False,
)
async def modes_state(ctx: CheckContext) -> str | None:
    modes = (await _new(ctx)).get("modes")
    if modes is None:
        raise NotApplicable("session/new reports no modes")
    problem = schema_problem(v1.SessionModeState, modes)
    if problem is not None:
        raise Fail("schema:SessionModeState", f"modes do not match the v1 schema: {problem}")
    ids = [m.get("id") for m in modes.get("availableModes") or [] if isinstance(m, dict)]
    current = modes.get("currentModeId")
    require(current in ids, "session-modes.mdx", f"currentModeId {current!r} is not one of the available modes {ids}")
    return f"{len(ids)} mode(s), current {current!r}"


@V1(
    "session-modes",
    "session/set_mode (when modes are reported) to another advertised mode succeeds",
    "config and modes",
    ("session-modes.mdx#from-the-client", "schema:CurrentModeUpdate"),
    prompts=False,
)
async def session_modes(ctx: CheckContext) -> str | None:
    p = ctx.probe
    result = await _new(ctx)
    modes = result.get("modes")
    if not isinstance(modes, dict) or not modes.get("availableModes"):
        raise NotApplicable("the session reports no modes")
    ids = [m.get("id") for m in modes["availableModes"] if isinstance(m, dict)]
    target = next((m for m in ids if m != modes.get("currentModeId")), ids[0])
    rule = "session-modes.mdx#from-the-client"
    sid = result["sessionId"]
    start = p.mark
    frame = await p.call("session/set_mode", {"sessionId": sid, "modeId": target}, rule=rule)
    require(frame.error is None, rule, f"setting the advertised mode {target!r} failed: {frame.error}")
    await p.barrier()
    for update in p.find(p.is_update(sid, "current_mode_update"), start):
        require(
            "currentModeId" in (update.update or {}),
            "schema:CurrentModeUpdate",
            f"line {update.index + 1}: current_mode_update without currentModeId: {update.raw[:120]!r}",
        )
    return f"mode {target!r}"


@V1(
    "config-values",
    "each config option session/new reports (if any) has a current value of its type (a select: one of its values)",
    "config and modes",
    ("session-config-options.mdx", "schema:SessionConfigOption"),
    prompts=False,
)
async def config_values(ctx: CheckContext) -> str | None:
    options = _options(await _new(ctx))
    if not options:
        raise NotApplicable("session/new reports no config options")
    rule = "session-config-options.mdx"
    for option in options:
        kind, current = option.get("type"), option.get("currentValue")
        if kind == "boolean":
            require(isinstance(current, bool), rule, f"boolean option {option.get('id')!r} has value {current!r}")
        elif kind == "select":
            values = _select_values(option)
            require(current in values, rule, f"option {option.get('id')!r}: currentValue {current!r} not in {values}")
    return f"{len(options)} option(s)"


@V1(
    "boolean-options",
    "session/new reports no boolean config option to a client that did not advertise them",
    "config and modes",
    ("session-config-options.mdx#boolean-config-options",),
    prompts=False,
)
async def boolean_options(ctx: CheckContext) -> str | None:
    options = _options(await _new(ctx))
    for option in options:
        # The runner does not advertise clientCapabilities.session.configOptions.boolean.
        require(
            option.get("type") != "boolean",
            "session-config-options.mdx#boolean-config-options",
            f"boolean config option {option.get('id')!r} sent to a client that did not advertise support",
        )
    return f"{len(options)} option(s), none boolean"


@V1(
    "config-options",
    "session/set_config_option (when config options are advertised) answers with the complete list",
    "config and modes",
    ("session-config-options.mdx#from-the-client",),
    prompts=False,
)
async def config_options(ctx: CheckContext) -> str | None:
    p = ctx.probe
    rule = "session-config-options.mdx#from-the-client"
    result = await _new(ctx)
    options = _options(result)
    select = next((o for o in options if o.get("type") == "select"), None)
    if select is None:
        raise NotApplicable("no select config option advertised")
    values = [o.get("value") for o in select.get("options") or [] if isinstance(o, dict) and "value" in o]
    if not values:
        raise NotApplicable(f"config option {select.get('id')!r} lists its values in groups only")
    target = next((v for v in values if v != select.get("currentValue")), values[0])
    params = {"sessionId": result["sessionId"], "configId": select.get("id"), "value": target}
    answer = await p.call_ok("session/set_config_option", params, rule=rule)
    listed = answer.get("configOptions") if isinstance(answer, dict) else None
    require(isinstance(listed, list), rule, f"the answer has no configOptions list: {answer!r}")
    assert isinstance(listed, list)
    ids = {o.get("id") for o in listed if isinstance(o, dict)}
    require(
        ids >= {o.get("id") for o in options}, rule, f"the answer must list every option, got {sorted(map(str, ids))}"
    )
    now = next((o.get("currentValue") for o in listed if isinstance(o, dict) and o.get("id") == select.get("id")), None)
    require(now == target, rule, f"after setting {select.get('id')}={target!r} the answer says {now!r}")
    return None
