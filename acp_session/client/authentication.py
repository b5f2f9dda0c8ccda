"""``ClientConnection.auth``: logging in and out, and the agent's auth state (Preview ``auth/status``).

The methods come from the agent's ``initialize`` answer; what is sent follows the agreed version (v2
``auth/login``, v1 ``authenticate``), through the connection's hub.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from ..auth import LoginMethod
from ..client_errors import CapabilityNotSupported
from ..codec import decoder
from ..protocol.base import ProtocolAdapter
from ..protocol.capabilities import pushes_auth_status
from ..schema import unstable as mu
from ..schema.types import (
    AuthMethod,
    AuthMethodAgent,
    LoginAuthRequest,
    LoginAuthResponse,
    LogoutAuthRequest,
    LogoutAuthResponse,
)

__all__ = ["Authentication"]

_AUTH_STATUS = decoder(mu.AuthStatusResponse)
T = TypeVar("T")


class AuthSource(Protocol):
    """What ``Authentication`` reads and calls (the connection's hub), so this module needs nothing of the hub's."""

    auth_state: mu.AuthStatusUpdateNotification | None

    @property
    def auth_methods(self) -> list[AuthMethod]: ...
    @property
    def login_methods(self) -> list[LoginMethod]: ...
    @property
    def capability_record(self) -> mu.InitializeResponse: ...
    @property
    def protocol(self) -> ProtocolAdapter: ...
    def require(self, method: str) -> None: ...
    async def call(self, method: str, params: Any, decode: Callable[[bytes], T], timeout: float | None = None) -> T: ...


class Authentication:
    """The agent's login methods, its auth state, and the login and logout calls."""

    __slots__ = ("_hub",)

    def __init__(self, hub: AuthSource) -> None:
        self._hub = hub

    @property
    def methods(self) -> list[AuthMethod]:
        """The auth methods the agent advertised, as the schema types them (``authMethods``)."""
        return self._hub.auth_methods

    @property
    def login_methods(self) -> list[LoginMethod]:
        """The agent's auth methods as ``LoginMethod`` values: every shape of both versions (``agent``,
        ``terminal``, codex-acp's ``env_var``, ``_meta`` terminal commands), unknown ones kept."""
        return self._hub.login_methods

    @property
    def pushes_status(self) -> bool:
        """Whether the agent says it pushes its auth state: ``auth.status`` (Preview), or the extension marker
        ``authStatus`` in ``_meta`` that codex-acp and claude-agent-acp advertise."""
        return pushes_auth_status(self._hub.capability_record)

    @property
    def state(self) -> mu.AuthStatusUpdateNotification | None:
        """The agent's latest auth state (Preview): from its ``auth/status_update`` notifications and
        ``status()`` answers; None until either arrived."""
        return self._hub.auth_state

    async def status(self, *, timeout: float | None = None) -> mu.AuthStatusResponse:
        """``auth/status`` (Preview, ``auth.status``): whether the user is logged in, with their accounts; the
        answer also becomes ``state``."""
        self._hub.require("auth/status")
        response = await self._hub.call("auth/status", mu.AuthStatusRequest(), _AUTH_STATUS, timeout)
        self._hub.auth_state = mu.AuthStatusUpdateNotification(
            state=response.state, accounts=response.accounts, meta=response.meta
        )
        return response

    async def login(self, method_id: str, *, timeout: float | None = None) -> LoginAuthResponse:
        """Log in with an advertised protocol-driven method: v2 ``auth/login``, v1 ``authenticate``
        (ACP2-029, ACP2-061). A terminal method is never sent (ACP1-014): run
        ``LoginMethod.terminal_command(...)`` in a terminal instead. ``timeout`` (seconds; None: none) ends the
        wait with ``RequestTimeout``, the request withdrawn (a login may wait on the user, in a browser)."""
        methods = self.login_methods
        if not methods:
            raise CapabilityNotSupported("auth/login", "authMethods")
        method = next((m for m in methods if m.method_id == method_id), None)
        if method is None:
            raise ValueError(f"auth method {method_id!r} was not advertised")
        agent_shape = isinstance(method.raw, AuthMethodAgent)
        if not agent_shape and not (self._hub.protocol.version == 1 and method.is_protocol_login):
            raise CapabilityNotSupported("auth/login", f"a protocol-driven login flow for {method_id!r}")
        request = LoginAuthRequest(method_id=method_id)
        return await self._hub.call("auth/login", request, decoder(LoginAuthResponse), timeout)

    async def logout(self) -> LogoutAuthResponse:
        """``auth/logout``; only when the agent advertised auth methods (ACP2-062)."""
        if not self.methods:
            raise CapabilityNotSupported("auth/logout", "authMethods")
        return await self._hub.call("auth/logout", LogoutAuthRequest(), decoder(LogoutAuthResponse))
