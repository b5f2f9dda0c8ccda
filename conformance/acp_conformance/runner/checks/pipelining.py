"""A client that pipelines: ``initialize`` and ``session/new`` in one write, the second sent before the first is
answered (both protocol versions). The agent may refuse the early request, or answer it; an answer must be in the
version that ``initialize`` negotiated, as the reference agent's was not (issue 50: a v1 client's pipelined
``session/new`` got v2's shape, with a boolean config option v1 forbids).

What is judged is the pipelining alone: a problem the agent's answer to the same ``session/new`` sent after the
handshake has too (a schema error, a root field, a boolean option) is the other checks' observation
(``session-new``, ``custom-root-fields``, ``boolean-options``), not this one's, so one defect fails one check."""

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


class _Shape(msgspec.Struct, frozen=True):
    """What is wrong with a ``session/new`` answer for a version, item by item (so two answers can be compared)."""

    schema: str | None  # the schema's complaint, if any
    unknown: frozenset[str]  # root fields the version's answer does not define
    booleans: frozenset[str]  # boolean config option ids (v1: for a client that did not offer them)


def _shape(version: int, result: Any) -> _Shape:
    schema = None
    try:
        decoder(_NEW_SESSION[version])(msgspec.json.encode(result))
    except msgspec.ValidationError as exc:
        schema = str(exc)
    new = result if isinstance(result, dict) else {}
    options = [o for o in new.get("configOptions") or [] if isinstance(o, dict)]
    booleans = frozenset(str(o.get("id")) for o in options if version == 1 and o.get("type") == "boolean")
    return _Shape(schema, frozenset(new) - _fields(_NEW_SESSION[version]), booleans)


def _problems(version: int, shape: _Shape, usual: _Shape | None) -> list[str]:
    """``shape``'s problems that the answer after the handshake (``usual``; None: none to compare) lacks."""
    problems: list[str] = []
    if shape.schema is not None and (usual is None or usual.schema is None):
        problems.append(f"schema:NewSessionResponse: it does not match the v{version} schema: {shape.schema}")
    unknown = sorted(shape.unknown - (usual.unknown if usual else frozenset()))
    if unknown:
        problems.append(f"extensibility.mdx: {', '.join(unknown)} at its root, not fields of v{version}'s answer")
    booleans = sorted(shape.booleans - (usual.booleans if usual else frozenset()))
    if booleans:
        problems.append(
            f"session-config-options.mdx#boolean-config-options: boolean config option(s) {booleans} for a client "
            "that did not offer them"
        )
    return problems


async def pipelined_session_new(p: Probe, offer: int, cwd: str, wait: float) -> tuple[int | None, str, list[str]]:
    """Offer ``offer`` with ``session/new`` (in that version's shape) in the same write: (the version the agent
    answered, what became of the session/new, what is wrong with its answer for that version that an answer to
    the same request after the handshake does not share)."""
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
    shape = _shape(version, answer.result)
    if not _problems(version, shape, None):
        return version, "session/new answered", []
    # Something is wrong: is it the pipelining? The same request once the handshake is over.
    again = await p.call("session/new", _session_params(version, cwd), rule="session-setup.mdx")
    usual = _shape(version, again.result) if again.error is None else None
    problems = _problems(version, shape, usual)
    if problems or usual is None:
        return version, "session/new answered", problems
    return version, "session/new answered, as it is after the handshake (its problems are the other checks')", []
