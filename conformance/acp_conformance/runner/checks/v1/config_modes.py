"""Config options and modes (v1): ``session/set_mode`` and ``session/set_config_option``."""

from __future__ import annotations

from ...outcomes import NotApplicable
from ...registry import CheckContext, require
from .base import V1

__all__ = ["config_options", "session_modes"]


@V1(
    "session-modes",
    "session/set_mode (when modes are advertised) accepts an advertised mode",
    "config and modes",
    ("session-modes.mdx#from-the-client",),
    prompts=False,
)
async def session_modes(ctx: CheckContext) -> str | None:
    p = ctx.probe
    result = await p.call_ok("session/new", p.new_session_params(ctx.cwd), rule="ACP1-012")
    modes = result.get("modes") if isinstance(result, dict) else None
    if not isinstance(modes, dict) or not modes.get("availableModes"):
        raise NotApplicable("the session advertises no modes")
    ids = [m.get("id") for m in modes["availableModes"] if isinstance(m, dict)]
    target = next((m for m in ids if m != modes.get("currentModeId")), ids[0])
    rule = "session-modes.mdx#from-the-client"
    frame = await p.call("session/set_mode", {"sessionId": result["sessionId"], "modeId": target}, rule=rule)
    require(frame.error_code != -32601, "session-modes.mdx#from-the-client", "modes advertised but set_mode is -32601")
    if frame.error is not None:
        ctx.warn("session-modes.mdx#from-the-client", f"setting the advertised mode {target!r} failed: {frame.error}")
    return f"mode {target!r}"


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
    result = await p.call_ok("session/new", p.new_session_params(ctx.cwd), rule="ACP1-012")
    options = [o for o in (result.get("configOptions") or []) if isinstance(o, dict)]
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
