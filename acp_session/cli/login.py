"""What the CLI says when an agent wants a login, and ``acp-session login``.

An agent that refuses work until the user logs in answers ``AuthenticationRequired`` with its login methods.
The CLI turns that into one short, specific message: which environment variables to set, which command to run
in a terminal, or that ``acp-session login`` runs the agent's own login over ACP.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

from ..auth import AuthenticationRequired, LoginMethod

__all__ = ["EXIT_AUTH", "auth_message", "auth_record", "pick_method"]

EXIT_AUTH = 8
"""Exit code: the agent needs a login first."""


def _command(argv: Sequence[str]) -> str:
    return shlex.join(argv)


def auth_message(error: AuthenticationRequired, agent_argv: Sequence[str], agent_option: str | None = None) -> str:
    """One short paragraph: what the agent refused, then one line per way to log in (``agent_option``: what to
    give ``--agent`` in the hint, e.g. a registry id; default: the command line)."""
    agent = agent_option or _command(agent_argv)
    reason = error.message if error.message and error.message != "Authentication required" else ""
    refused = error.method or "the request"
    ways: list[str] = []
    env_vars: list[str] = []
    for method in error.methods:
        env_vars.extend(v for v in method.env_vars if v not in env_vars)
    if env_vars:
        ways.append(f"set {' or '.join(env_vars)} in the environment")
    for method in error.methods:
        command = method.terminal_command(agent_argv)
        if command is not None:
            env = "".join(f"{k}={shlex.quote(v)} " for k, v in method.terminal_env.items())
            ways.append(f"run in a terminal: {env}{_command(command)}   ({method.name})")
    protocol = [m for m in error.methods if m.kind == "agent" and m.login_command is None]
    if protocol:
        ids = " | ".join(m.method_id for m in protocol)
        ways.append(f"run: acp-session login {ids} --agent {shlex.quote(agent)}")
    lines = [f"acp-session: the agent needs a login ({refused} was refused{': ' + reason if reason else ''})"]
    lines += [f"  {'or ' if index else ''}{way}" for index, way in enumerate(ways)]
    if not ways:
        lines.append("  the agent advertised no way to log in; see its documentation")
    return "\n".join(lines)


def auth_record(error: AuthenticationRequired) -> dict[str, Any]:
    """The ``--json`` form: an ``error`` record with the login methods and the agent's error data."""
    return {
        "event": "error",
        "error_type": "AuthenticationRequired",
        "error": error.message,
        "code": error.code,
        "method": error.method,
        "data": error.data,
        "login_methods": [_method_json(m) for m in error.methods],
    }


def _method_json(method: LoginMethod) -> dict[str, Any]:
    return {
        "id": method.method_id,
        "name": method.name,
        "kind": method.kind,
        "description": method.description,
        "env_vars": list(method.env_vars),
        "command": list(method.login_command) if method.login_command else None,
        "args": list(method.terminal_args) if method.terminal_args is not None else None,
    }


def pick_method(methods: Sequence[LoginMethod], wanted: str | None) -> LoginMethod:
    """The method ``acp-session login`` runs: the one named, or the only one; else a ``ValueError`` listing them."""
    if wanted is not None:
        for method in methods:
            if method.method_id == wanted:
                return method
        known = ", ".join(m.method_id for m in methods) or "none"
        raise ValueError(f"the agent has no login method {wanted!r} (it offers: {known})")
    if len(methods) == 1:
        return methods[0]
    if not methods:
        raise ValueError("the agent advertises no login methods")
    listing = "; ".join(f"{m.method_id} ({m.kind}: {m.name})" for m in methods)
    raise ValueError(f"the agent offers several login methods, name one: {listing}")
