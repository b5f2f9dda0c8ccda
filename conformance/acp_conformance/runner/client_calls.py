"""The agent's calls into the client under protocol v1 (``fs/*``, ``terminal/*``): which the runner answers, and
what the v1 schema and docs object to in their params (the probe answers them, the client-methods checks judge
the record)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import msgspec

from acp_session.codec import decoder
from acp_session.schema import v1

from .frames import Frame

__all__ = ["ELICITATION", "V1_CLIENT_METHODS", "ClientCall", "client_call_problems"]


@dataclass
class ClientCall:
    """A request the agent sent to the client (fs/*, terminal/*), with what was wrong with it, if anything."""

    frame: Frame
    method: str
    params: dict[str, Any]
    problems: list[str] = field(default_factory=list)  # "rule: message"
    advertised: bool = True  # whether the runner advertised the capability the method needs
    outcome: str = "pending"  # "ok", or "error CODE"
    result: Any = None


# The v1 client methods the runner answers: params type, provider method, what must be advertised.
V1_CLIENT_METHODS: dict[str, tuple[Any, str, str]] = {
    "fs/read_text_file": (v1.ReadTextFileRequest, "read_text_file", "fs.readTextFile"),
    "fs/write_text_file": (v1.WriteTextFileRequest, "write_text_file", "fs.writeTextFile"),
    "terminal/create": (v1.CreateTerminalRequest, "create_terminal", "terminal"),
    "terminal/output": (v1.TerminalOutputRequest, "terminal_output", "terminal"),
    "terminal/wait_for_exit": (v1.WaitForTerminalExitRequest, "wait_for_terminal_exit", "terminal"),
    "terminal/kill": (v1.KillTerminalRequest, "kill_terminal", "terminal"),
    "terminal/release": (v1.ReleaseTerminalRequest, "release_terminal", "terminal"),
}


ELICITATION = "elicitation/create"
"""The v1 client method an agent may call only when the client offered an elicitation mode (elicitation.mdx)."""
_ELICITATION_REQUEST = decoder(v1.CreateElicitationRequest)


def client_call_problems(method: str, params: dict[str, Any]) -> list[str]:
    """What the v1 schema and docs object to in the params of an ``fs/*``, ``terminal/*`` or elicitation call."""
    problems: list[str] = []
    if method == ELICITATION:
        try:
            _ELICITATION_REQUEST(msgspec.json.encode(params))
        except msgspec.ValidationError as exc:
            problems.append(f"schema:CreateElicitationRequest: {method} params do not match the v1 schema: {exc}")
        return problems
    spec = V1_CLIENT_METHODS.get(method)
    if spec is None:
        return problems
    doc = "file-system.mdx" if method.startswith("fs/") else "terminals.mdx"
    try:
        decoder(spec[0])(msgspec.json.encode(params))
    except msgspec.ValidationError as exc:
        problems.append(f"schema:{spec[0].__name__}: {method} params do not match the v1 schema: {exc}")
        return problems
    for key in ("path", "cwd"):
        value = params.get(key)
        if isinstance(value, str) and not os.path.isabs(value):
            problems.append(f"overview.mdx: {method} {key} {value!r} is not absolute (all file paths MUST be)")
    if method.startswith("fs/") and not isinstance(params.get("path"), str):
        problems.append(f"{doc}: {method} without a path")
    return problems
