"""What an agent offers, read from its whole ``initialize`` answer (the capability record).

The record is the answer decoded with the unstable schema's types (``schema.unstable.InitializeResponse``), a
superset of the stable one: the Preview capabilities (``session.fork``, ``session.title``,
``session.systemPrompt``, ``session.archive``, ``session.status``, ``auth.status``, ``providers``, MCP over
``acp``) are kept, where the stable types would drop them. A v1 agent's answer is mapped into the same shape
(``v1/convert.py``), so one table answers ``supports(method)`` for every method of both versions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
from msgspec import UNSET

from ..codec import convert
from ..schema import unstable as mu

__all__ = [
    "PREVIEW_METHODS",
    "REQUIRED_CAPABILITY",
    "auth_status_change",
    "pushes_auth_status",
    "is_offered",
    "method_offered",
    "session_capabilities",
    "system_prompt_modes",
]


def is_offered(value: Any) -> bool:
    """A capability flag or object: omitted, ``null`` and ``false`` mean not offered; ``{}`` or ``true`` offer it."""
    return value is not UNSET and value is not None and value is not False


def session_capabilities(record: mu.InitializeResponse) -> mu.SessionCapabilities | None:
    """The record's ``capabilities.session``, or None when the agent offers no sessions."""
    caps = record.capabilities
    session = caps.session if isinstance(caps, mu.AgentCapabilities) else None
    return session if isinstance(session, mu.SessionCapabilities) else None


def system_prompt_modes(record: mu.InitializeResponse) -> frozenset[str]:
    """The ``systemPrompt`` modes the agent accepts: none, ``append`` (the capability alone), or also
    ``override`` (``session.systemPrompt.mode.override``)."""
    session = session_capabilities(record)
    prompt = session.system_prompt if session is not None else None
    if not isinstance(prompt, mu.SessionSystemPromptCapabilities):
        return frozenset()
    mode = prompt.mode
    if isinstance(mode, mu.SessionSystemPromptModeCapabilities) and is_offered(mode.override):
        return frozenset({"append", "override"})
    return frozenset({"append"})


def _session(flag: str | None) -> Callable[[mu.InitializeResponse], bool]:
    """Offered with sessions (``flag`` None: the v2 baseline) or with the session capability ``flag``."""

    def check(record: mu.InitializeResponse) -> bool:
        session = session_capabilities(record)
        return session is not None and (flag is None or is_offered(getattr(session, flag)))

    return check


def _agent(flag: str) -> Callable[[mu.InitializeResponse], bool]:
    def check(record: mu.InitializeResponse) -> bool:
        caps = record.capabilities
        return isinstance(caps, mu.AgentCapabilities) and is_offered(getattr(caps, flag))

    return check


def _auth_status(record: mu.InitializeResponse) -> bool:
    caps = record.capabilities
    auth = caps.auth if isinstance(caps, mu.AgentCapabilities) else None
    return isinstance(auth, mu.AgentAuthCapabilities) and is_offered(auth.status)


def _auth_methods(record: mu.InitializeResponse) -> bool:
    return isinstance(record.auth_methods, list) and bool(record.auth_methods)


def _per_item(record: mu.InitializeResponse) -> bool:
    # terminal/cancel and tool_call/cancel are offered per item (its capabilities.cancel), never globally.
    return session_capabilities(record) is not None


_OFFERED: dict[str, tuple[Callable[[mu.InitializeResponse], bool], str]] = {
    "session/new": (_session(None), "session"),
    "session/list": (_session(None), "session"),
    "session/resume": (_session(None), "session"),
    "session/close": (_session(None), "session"),
    "session/prompt": (_session(None), "session"),
    "session/cancel": (_session(None), "session"),
    "session/set_config_option": (_session(None), "session"),
    "session/delete": (_session("delete"), "session.delete"),
    "session/fork": (_session("fork"), "session.fork"),
    "session/set_title": (_session("title"), "session.title"),
    "session/archive": (_session("archive"), "session.archive"),
    "session/unarchive": (_session("archive"), "session.archive"),
    "session/status": (_session("status"), "session.status"),
    "auth/login": (_auth_methods, "authMethods"),
    "auth/logout": (_auth_methods, "authMethods"),
    "auth/status": (_auth_status, "auth.status"),
    "providers/list": (_agent("providers"), "providers"),
    "providers/set": (_agent("providers"), "providers"),
    "providers/disable": (_agent("providers"), "providers"),
    "terminal/cancel": (_per_item, "the terminal's capabilities.cancel"),
    "tool_call/cancel": (_per_item, "the tool call's capabilities.cancel"),
}

REQUIRED_CAPABILITY: dict[str, str] = {method: capability for method, (_, capability) in _OFFERED.items()}
"""Each agent method (both schemas) -> the capability that offers it (what ``CapabilityNotSupported`` names)."""

PREVIEW_METHODS: frozenset[str] = frozenset(mu.AGENT_METHODS) - {
    "initialize",
    "session/new",
    "session/list",
    "session/resume",
    "session/close",
    "session/delete",
    "session/prompt",
    "session/set_config_option",
    "auth/login",
    "auth/logout",
    "terminal/cancel",
    "tool_call/cancel",
}
"""Agent methods only the unstable schema defines (``session/fork``, ``session/set_title``, ``auth/status``, ...)."""


def method_offered(record: mu.InitializeResponse, method: str) -> bool:
    """Whether the record offers ``method``: a baseline method when the agent offers sessions, any other when its
    capability is advertised; an extension method (``_``-prefixed) is always allowed; an unknown one never."""
    entry = _OFFERED.get(method)
    if entry is not None:
        return entry[0](record)
    return method.startswith("_")


def _has_marker(meta: Any) -> bool:
    return isinstance(meta, dict) and "authStatus" in meta


def pushes_auth_status(record: mu.InitializeResponse) -> bool:
    """``auth.status`` (Preview), or the extension marker ``authStatus`` real agents put in the capabilities'
    ``_meta`` (claude-agent-acp) or ``auth._meta`` (codex-acp): the agent pushes its auth state."""
    caps = record.capabilities
    if not isinstance(caps, mu.AgentCapabilities):
        return False
    auth = caps.auth
    return (
        _auth_status(record)
        or _has_marker(caps.meta)
        or (isinstance(auth, mu.AgentAuthCapabilities) and _has_marker(auth.meta))
    )


def auth_status_change(params: Any) -> mu.AuthStatusUpdateNotification | None:
    """An ``_auth/status_update`` extension notification as the schema's auth state: the schema's own shape
    (``state``, ``accounts``) as it is, or the agents' ``{"authStatus": {"kind", "label", ...}}`` (``kind: "none"``
    is logged out; any other kind is an identity, kept as one account with the label); the extension payload is
    kept whole in ``_meta["authStatus"]``. None for anything else."""
    if not isinstance(params, dict):
        return None
    if isinstance(params.get("state"), str):
        try:
            return convert(params, mu.AuthStatusUpdateNotification)
        except msgspec.ValidationError:
            return None
    status = params.get("authStatus")
    if not isinstance(status, dict):
        return None
    kind = status.get("kind")
    if kind == "none":
        return mu.AuthStatusUpdateNotification(state="unauthenticated", meta={"authStatus": status})
    label = status.get("label")
    account = mu.AuthAccount(
        label=label if isinstance(label, str) else str(kind),
        email=status["email"] if isinstance(status.get("email"), str) else UNSET,
        organization=status["organization"] if isinstance(status.get("organization"), str) else UNSET,
    )
    state = "authenticated" if isinstance(kind, str) else "unknown"
    return mu.AuthStatusUpdateNotification(state=state, accounts=[account], meta={"authStatus": status})
