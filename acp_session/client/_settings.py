"""What a connection reads from the ``ClientBuilder`` that made it (internal): a protocol below the builder, so the
hub, its permission and elicitation decisions and its update routing name it without importing the builder, which
imports the connection and through it the hub.

The connection keeps reading the builder, not a copy: a handler set after ``connect`` is used from then on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from ..protocol.negotiate import ClientOffering
from ..schema.types import RequestPermissionRequest
from .permission_policy import PermissionDecision, PermissionPolicy

if TYPE_CHECKING:
    from ..providers import FileSystemProvider, TerminalProvider
    from ..session import Limits
    from ..telemetry import Instrumentation

__all__ = ["BuilderSettings", "Fallback", "Handler", "PolicyListener"]

Handler = Callable[[Any], Any]
Fallback = Callable[[str, bytes], Any]
PolicyListener = Callable[[RequestPermissionRequest, PermissionDecision], None]


class BuilderSettings(ClientOffering, Protocol):
    """The builder's settings and handlers a connection reads (``ClientBuilder`` has them all; mypy checks it where
    a connection is made). ``ClientOffering`` adds what ``initialize`` offers."""

    @property
    def versions(self) -> tuple[int, ...]: ...

    # Limits, providers, instrumentation: read when the connection is made.
    @property
    def _limits(self) -> Limits: ...
    @property
    def _file_system(self) -> Callable[[], FileSystemProvider] | None: ...
    @property
    def _terminals(self) -> Callable[[], TerminalProvider] | None: ...
    @property
    def _tools_over_mcp(self) -> bool: ...
    @property
    def _instrumentation(self) -> Instrumentation | None: ...

    # Handlers of the agent's notifications and requests: read when one arrives.
    @property
    def _update(self) -> Handler | None: ...
    @property
    def _auth_status(self) -> Handler | None: ...
    @property
    def _ext_requests(self) -> dict[str, Handler]: ...
    @property
    def _ext_notifications(self) -> dict[str, Handler]: ...
    @property
    def _fallback_request(self) -> Fallback | None: ...
    @property
    def _fallback_notification(self) -> Fallback | None: ...
    @property
    def _elicitation_complete(self) -> Handler | None: ...

    # The permission and elicitation decisions (``_decisions.Decisions``).
    @property
    def _policy(self) -> PermissionPolicy | None: ...
    @property
    def _permission(self) -> Handler | None: ...
    @property
    def _policy_listener(self) -> PolicyListener | None: ...
    @property
    def _elicitation(self) -> Handler | None: ...
    @property
    def _elicitation_modes(self) -> frozenset[str]: ...
