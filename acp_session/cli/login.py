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

__all__ = ["DEFAULT_LOGIN_TIMEOUT", "EXIT_AUTH", "auth_message", "auth_record", "pick_method"]

EXIT_AUTH = 8
"""Exit code: the agent needs a login first."""
DEFAULT_LOGIN_TIMEOUT = 300.0
"""Seconds ``acp-session login`` waits for the agent to finish a protocol login (``--login-timeout``): long enough
for a login in a browser, short of forever for an agent that never answers."""
LISTED = 10
"""The most login methods (or environment variables) one message names; the rest are counted, not quoted."""
LISTED_JSON = 100
"""The most login methods an ``--json`` error record carries; ``login_methods_omitted`` counts the rest."""
_NAME = 80
"""The most characters of one method's id or name quoted."""


def _clip(text: str, limit: int = _NAME) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def _listing(items: Sequence[str], separator: str, limit: int = LISTED) -> str:
    """``items`` joined, at most ``limit`` of them (each clipped), then how many more there are."""
    shown = separator.join(_clip(item, 3 * _NAME) for item in items[:limit])
    more = len(items) - limit
    return shown + (f"{separator}and {more} more" if more > 0 else "")


def _command(argv: Sequence[str]) -> str:
    return shlex.join(argv)


def auth_message(error: AuthenticationRequired, agent_argv: Sequence[str], agent_option: str | None = None) -> str:
    """One short paragraph: what the agent refused, then one line per way to log in (``agent_option``: what to
    give ``--agent`` in the hint, e.g. a registry id; default: the command line)."""
    agent = agent_option or _command(agent_argv)
    reason = error.message if error.message and error.message != "Authentication required" else ""
    refused = error.method or "the request"
    ways: list[str] = []
    env_vars = list(dict.fromkeys(v for method in error.methods for v in method.env_vars))
    if env_vars:
        ways.append(f"set {_listing(env_vars, ' or ')} in the environment")
    commands = 0
    for method in error.methods:
        command = method.terminal_command(agent_argv)
        if command is not None:
            commands += 1
            if commands > LISTED:
                continue
            env = "".join(f"{k}={shlex.quote(v)} " for k, v in method.terminal_env.items())
            ways.append(f"run in a terminal: {_clip(env + _command(command), 4096)}   ({_clip(method.name)})")
    if commands > LISTED:
        ways.append(f"one of {commands - LISTED} more terminal logins (--json lists more of them)")
    protocol = [m for m in error.methods if m.kind == "agent" and m.login_command is None]
    if protocol:
        ids = _listing([m.method_id for m in protocol], " | ")
        ways.append(f"run: acp-session login {ids} --agent {shlex.quote(agent)}")
    reason = _clip(reason, 400)
    lines = [f"acp-session: the agent needs a login ({refused} was refused{': ' + reason if reason else ''})"]
    lines += [f"  {'or ' if index else ''}{way}" for index, way in enumerate(ways)]
    if not ways:
        lines.append("  the agent advertised no way to log in; see its documentation")
    return "\n".join(lines)


def auth_record(error: AuthenticationRequired) -> dict[str, Any]:
    """The ``--json`` form: an ``error`` record with the login methods (at most ``LISTED_JSON``; the number left
    out in ``login_methods_omitted``) and the agent's error data."""
    methods = error.methods
    return {
        "event": "error",
        "error_type": "AuthenticationRequired",
        "error": error.message,
        "code": error.code,
        "method": error.method,
        "data": error.data,
        "login_methods": [_method_json(m) for m in methods[:LISTED_JSON]],
        "login_methods_omitted": max(0, len(methods) - LISTED_JSON),
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
        known = _listing([m.method_id for m in methods], ", ") or "none"
        raise ValueError(f"the agent has no login method {_clip(wanted)!r} (it offers: {known})")
    if len(methods) == 1:
        return methods[0]
    if not methods:
        raise ValueError("the agent advertises no login methods")
    listing = _listing([f"{_clip(m.method_id)} ({m.kind}: {_clip(m.name)})" for m in methods], "; ")
    raise ValueError(f"the agent offers several login methods, name one: {listing}")
