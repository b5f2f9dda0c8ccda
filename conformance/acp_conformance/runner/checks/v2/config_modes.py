"""Config options (v2): ``session/set_config_option``."""

from __future__ import annotations

from typing import Any

from acp_session.schema.types import (
    SetSessionConfigOptionBooleanRequest,
    SetSessionConfigOptionValueIdRequest,
    UnknownSetSessionConfigOptionRequest,
)

from ...outcomes import NotApplicable
from ...registry import CheckContext, require
from .base import V2

__all__ = ["config_options"]


def current_values(listing: Any) -> dict[str, Any]:
    options = listing.get("configOptions") if isinstance(listing, dict) else None
    return {str(o.get("configId")): o.get("currentValue") for o in options or [] if isinstance(o, dict)}


@V2(
    "config-options",
    "session/set_config_option applies valid values and rejects bad ones with -32602, changing nothing",
    "config and modes",
    ("ACP2-080", "ACP2-081", "ACP2-082"),
    prompts=False,
)
async def config_options(ctx: CheckContext) -> str | None:
    p = ctx.probe
    result = await p.call_ok("session/new", p.new_session_params(ctx.cwd), rule="session-setup.mdx")
    sid = result["sessionId"]
    options = [o for o in result.get("configOptions") or [] if isinstance(o, dict)]
    if not options:
        raise NotApplicable("no config options advertised")
    before = current_values(result)
    select = next((o for o in options if o.get("type") == "select"), None)

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
    if select is None:
        return "no select option to set"
    config_id = select["configId"]
    await rejected(
        SetSessionConfigOptionValueIdRequest(session_id=sid, config_id=config_id, value="_acp_conformance_not_a_value"),
        "ACP2-081",
        "a value the option does not offer",
    )
    await rejected(
        SetSessionConfigOptionBooleanRequest(session_id=sid, config_id=config_id, value=True),
        "ACP2-081",
        "a boolean for a select option",
    )
    values = [o.get("value") for o in select.get("options", []) if isinstance(o, dict) and "value" in o]
    target = str(next((v for v in values if v != select.get("currentValue")), select.get("currentValue")))
    listing = await p.call_ok(
        "session/set_config_option",
        SetSessionConfigOptionValueIdRequest(session_id=sid, config_id=config_id, value=target),
        rule="ACP2-080",
    )
    after = current_values(listing)
    require(
        after.get(config_id) == target,
        "ACP2-080",
        f"after setting {config_id}={target!r} the returned list says {after.get(config_id)!r}",
    )
    require(
        set(after) == set(before), "ACP2-080", f"the response must list every config option: {sorted(map(str, after))}"
    )
    changed = {k for k in before if k != config_id and before[k] != after.get(k)}
    require(not changed, "ACP2-081", f"rejected requests changed {sorted(map(str, changed))}")
    return None
