"""``ClientConnection.providers``: the model providers the agent can be pointed at (Preview ``providers/*``).

Each call is sent only when the agent advertised ``providers`` (else ``CapabilityNotSupported``). Not to be
confused with ``acp_session.providers``, the client's own file system and terminals (``ClientConnection.tools``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

import msgspec

from ..codec import decoder
from ..schema import unstable as mu

__all__ = ["ModelProviders", "ProviderList"]

_PROVIDERS = decoder(mu.ListProvidersResponse)
T = TypeVar("T")


class ProvidersSource(Protocol):
    """What ``ModelProviders`` calls (the connection's hub), so this module needs nothing of the hub's."""

    def require(self, method: str) -> None: ...
    async def call(self, method: str, params: Any, decode: Callable[[bytes], T], timeout: float | None = None) -> T: ...


ProviderList = list[mu.ProviderInfo]
"""What ``ModelProviders.list`` returns (an alias: the method's name hides the builtin inside the class)."""


class ModelProviders:
    """List, set and disable the agent's model providers."""

    __slots__ = ("_hub",)

    def __init__(self, hub: ProvidersSource) -> None:
        self._hub = hub

    async def list(self, *, timeout: float | None = None) -> ProviderList:
        """``providers/list``: the model providers the agent can be pointed at, with their current settings."""
        self._hub.require("providers/list")
        response = await self._hub.call("providers/list", mu.ListProvidersRequest(), _PROVIDERS, timeout)
        return [*response.providers]

    async def set(
        self,
        provider_id: str,
        api_type: str,
        base_url: str,
        *,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
    ) -> None:
        """``providers/set``: point a provider at ``base_url`` speaking ``api_type`` (``openai``, ``anthropic``,
        ...), with extra request ``headers``."""
        self._hub.require("providers/set")
        params = mu.SetProviderRequest(
            provider_id=provider_id,
            api_type=api_type,
            base_url=base_url,
            headers=dict(headers) if headers is not None else msgspec.UNSET,
        )
        await self._hub.call("providers/set", params, decoder(mu.SetProviderResponse), timeout)

    async def disable(self, provider_id: str, *, timeout: float | None = None) -> None:
        """``providers/disable``: stop using a provider that is not required."""
        self._hub.require("providers/disable")
        params = mu.DisableProviderRequest(provider_id=provider_id)
        await self._hub.call("providers/disable", params, decoder(mu.DisableProviderResponse), timeout)
