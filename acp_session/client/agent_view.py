"""``ClientConnection.agent``: what the agent said at ``initialize`` and what it offers, read-only.

Every answer here comes from the negotiated protocol adapter, in the model's (v2) types whatever version was
agreed; nothing is sent.
"""

from __future__ import annotations

from typing import Protocol

from ..schema import unstable as mu
from ..schema.types import AgentCapabilities, Implementation, InitializeResponse

__all__ = ["AgentView"]


class AgentSource(Protocol):
    """What ``AgentView`` reads (the connection's hub), so this module needs nothing of the hub's."""

    @property
    def agent_info(self) -> Implementation: ...
    @property
    def agent_capabilities(self) -> AgentCapabilities: ...
    @property
    def initialize_response(self) -> InitializeResponse | None: ...
    @property
    def capability_record(self) -> mu.InitializeResponse: ...
    @property
    def system_prompt_modes(self) -> frozenset[str]: ...
    def supports(self, method: str) -> bool: ...
    def require(self, method: str) -> None: ...


class AgentView:
    """The agent as this connection sees it: its identity, capabilities and the methods it offers."""

    __slots__ = ("_hub",)

    def __init__(self, hub: AgentSource) -> None:
        self._hub = hub

    @property
    def info(self) -> Implementation:
        """The agent's name, title and version (``agentInfo``)."""
        return self._hub.agent_info

    @property
    def capabilities(self) -> AgentCapabilities:
        """The agent's stable capabilities (empty when it sent none)."""
        return self._hub.agent_capabilities

    @property
    def initialize_response(self) -> InitializeResponse | None:
        """The agent's ``initialize`` answer in the model's (v2) shape, whatever version was agreed."""
        return self._hub.initialize_response

    @property
    def capability_record(self) -> mu.InitializeResponse:
        """The agent's whole ``initialize`` answer in the unstable schema's types, for both versions (a v1 answer
        mapped): the Preview capabilities (``session.fork``, ``session.title``, ``session.systemPrompt``,
        ``session.archive``, ``session.status``, ``auth.status``, ``providers``) are here, typed, where
        ``initialize_response`` (the stable types) has no field for them."""
        return self._hub.capability_record

    @property
    def system_prompt_modes(self) -> frozenset[str]:
        """The ``systemPrompt`` modes (Preview) the agent accepts on new, resume and fork: empty, ``append``, or
        ``append`` and ``override``."""
        return self._hub.system_prompt_modes

    def supports(self, method: str) -> bool:
        """Whether the agent offers ``method`` (model method names, e.g. ``session/list``) in the agreed version,
        read from the capability record: a baseline method when the agent offers sessions, any other only when
        its capability was advertised (``session/fork`` with ``session.fork``, ``auth/status`` with
        ``auth.status``, ...); extension methods (``_``-prefixed) are always allowed, unknown methods never."""
        return self._hub.supports(method)

    def require(self, method: str) -> None:
        """Raise ``CapabilityNotSupported`` (naming the capability) unless the agent offers ``method``."""
        self._hub.require(method)
