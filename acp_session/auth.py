"""How to log in to an agent: one typed view of every auth method shape, and the error that asks for it.

Agents advertise auth methods in ``initialize`` in several shapes: protocol-driven (``agent``: the client calls
``authenticate`` / ``auth/login``), ``terminal`` (the client runs the agent's own login in a terminal: the
agent's command with ``args`` and ``env``), and shapes no schema defines yet, such as codex-acp's ``env_var``
(``vars``: environment variables to set) or a terminal login command in ``_meta["terminal-auth"]``. A
``LoginMethod`` reads any of them, keeps unknown ones, and never fails to decode.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .codec import to_builtins
from .errors import AuthRequired

__all__ = ["AuthenticationRequired", "LoginMethod", "login_methods"]


@dataclass(frozen=True)
class LoginMethod:
    """One way to log in to the agent, whatever shape the agent advertised it in."""

    method_id: str
    name: str
    kind: str
    """``agent`` (the client calls ``authenticate``), ``terminal``, ``env_var``, or another tag (kept)."""
    description: str | None = None
    env_vars: tuple[str, ...] = ()
    """For ``env_var``: the environment variables the agent reads (any one of them, unless it says otherwise)."""
    terminal_args: tuple[str, ...] | None = None
    """For ``terminal``: the arguments to run the agent's own command with (``None`` when not a terminal login)."""
    terminal_env: dict[str, str] = field(default_factory=dict)
    login_command: tuple[str, ...] | None = None
    """A complete login command the agent named (``_meta["terminal-auth"]``), if any."""
    raw: Any = None
    """The method as received (a generated type, or the raw JSON of an unknown shape)."""

    @property
    def is_protocol_login(self) -> bool:
        """Whether ``ClientConnection.auth.login`` can run it (a terminal login never is: ACP1-014)."""
        return self.kind in ("agent", "env_var")

    def terminal_command(self, agent_argv: Sequence[str]) -> tuple[str, ...] | None:
        """The command that runs this login in a terminal: the agent's own ``login_command``, or the agent's
        command line with ``terminal_args``; None when this method is not a terminal login."""
        if self.login_command:
            return self.login_command
        if self.terminal_args is not None:
            return (*agent_argv, *self.terminal_args)
        return None


def _strings(value: Any) -> tuple[str, ...]:
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def _one(plain: dict[str, Any]) -> LoginMethod | None:
    method_id = plain.get("methodId", plain.get("id"))
    if not isinstance(method_id, str):
        return None
    kind = plain.get("type") if isinstance(plain.get("type"), str) else "agent"
    given_name = plain.get("name")
    name = given_name if isinstance(given_name, str) else method_id
    description = plain.get("description") if isinstance(plain.get("description"), str) else None
    env_vars = tuple(
        v["name"] for v in plain.get("vars", []) or [] if isinstance(v, dict) and isinstance(v.get("name"), str)
    )
    terminal_env: dict[str, str] = {}
    env = plain.get("env")
    if isinstance(env, dict):
        terminal_env = {k: v for k, v in env.items() if isinstance(k, str) and isinstance(v, str)}
    elif isinstance(env, list):  # a list of {name, value}
        terminal_env = {
            e["name"]: e["value"]
            for e in env
            if isinstance(e, dict) and isinstance(e.get("name"), str) and isinstance(e.get("value"), str)
        }
    args = _strings(plain.get("args")) if kind == "terminal" else None
    login_command: tuple[str, ...] | None = None
    meta = plain.get("_meta")
    legacy = meta.get("terminal-auth") if isinstance(meta, dict) else None
    if isinstance(legacy, dict) and isinstance(legacy.get("command"), str):
        login_command = (legacy["command"], *_strings(legacy.get("args")))
    return LoginMethod(
        method_id=method_id,
        name=name,
        kind=str(kind),
        description=description,
        env_vars=env_vars,
        terminal_args=args,
        terminal_env=terminal_env,
        login_command=login_command,
        raw=None,
    )


def login_methods(methods: Iterable[Any]) -> list[LoginMethod]:
    """Every advertised method as a ``LoginMethod`` (a shape without an id is skipped)."""
    out: list[LoginMethod] = []
    for method in methods:
        plain = to_builtins(method)
        if not isinstance(plain, dict):
            continue
        found = _one(plain)
        if found is not None:
            out.append(LoginMethod(**{**found.__dict__, "raw": method}))
    return out


class AuthenticationRequired(AuthRequired):
    """The agent refused ``method`` until the user logs in (JSON-RPC -32000, ``AuthRequired``).

    ``methods`` are the agent's advertised ways to log in; ``data`` is the error's own data (where agents
    put the real reason), as received.
    """

    def __init__(
        self,
        code: int | None = None,
        message: str | None = None,
        data: Any = None,
        *,
        methods: Sequence[LoginMethod] = (),
        method: str = "",
    ) -> None:
        super().__init__(code, message, data)
        self.methods = list(methods)
        self.method = method

    @classmethod
    def of(cls, error: AuthRequired, methods: Sequence[LoginMethod], method: str) -> AuthenticationRequired:
        """The same error, with the agent's login methods and the refused method attached."""
        if isinstance(error, AuthenticationRequired):
            return error
        return cls(error.code, error.message, error.data, methods=methods, method=method)
