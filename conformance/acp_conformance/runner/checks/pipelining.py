"""A client that pipelines: ``initialize`` and ``session/new`` in one write, the second sent before the first is
answered (both protocol versions). The agent may refuse the early request, or answer it; an answer must be in the
version that ``initialize`` negotiated, as the reference agent's was not (issue 50: a v1 client's pipelined
``session/new`` got v2's shape, with a boolean config option v1 forbids)."""

from __future__ import annotations

from typing import Any

import msgspec

from acp_session.codec import decoder
from acp_session.schema import types as v2
from acp_session.schema import v1

from ..probe import Probe, v1_offer

__all__ = ["pipelined_session_new"]

_NEW_SESSION = {1: v1.NewSessionResponse, 2: v2.NewSessionResponse}


def _fields(kind: Any) -> frozenset[str]:
    return frozenset(f.encode_name for f in msgspec.structs.fields(kind))


def _session_params(version: int, cwd: str) -> Any:
    return v1.NewSessionRequest(cwd=cwd, mcp_servers=[]) if version == 1 else v2.NewSessionRequest(cwd=cwd)


async def pipelined_session_new(p: Probe, offer: int, cwd: str, wait: float) -> tuple[int | None, str, list[str]]:
    """Offer ``offer`` with ``session/new`` (in that version's shape) in the same write: (the version the agent
    answered, what became of the session/new, what is wrong with its answer for that version)."""
    init_id, new_id = await p.send_pipelined(
        ("initialize", v1_offer(offer, fs=False, terminal=False)), ("session/new", _session_params(offer, cwd))
    )
    init = await p.response(init_id, wait)
    answer = await p.response(new_id, wait)
    result = init.result if init is not None else None
    version = result.get("protocolVersion") if isinstance(result, dict) else None
    if not isinstance(version, int) or version not in _NEW_SESSION:
        return None, "initialize was not answered with version 1 or 2", []
    if answer is None:
        return version, f"session/new got no answer within {wait:g}s", []
    if answer.error is not None:
        return version, f"session/new refused with {answer.error_code} (before initialize was answered)", []
    problems: list[str] = []
    new = answer.result if isinstance(answer.result, dict) else {}
    try:
        decoder(_NEW_SESSION[version])(msgspec.json.encode(answer.result))
    except msgspec.ValidationError as exc:
        problems.append(f"schema:NewSessionResponse: it does not match the v{version} schema: {exc}")
    unknown = sorted(set(new) - _fields(_NEW_SESSION[version]))
    if unknown:
        problems.append(f"extensibility.mdx: {', '.join(unknown)} at its root, not fields of v{version}'s answer")
    booleans = [
        o.get("id") for o in new.get("configOptions") or [] if isinstance(o, dict) and o.get("type") == "boolean"
    ]
    if version == 1 and booleans:
        problems.append(
            f"session-config-options.mdx#boolean-config-options: boolean config option(s) {booleans} for a client "
            "that did not offer them"
        )
    return version, "session/new answered", problems
