"""The client: ``ClientBuilder`` (identity, capabilities, typed handlers) and ``ClientConnection`` (an initialized
connection to an agent, the commands a user calls).

``builder.connect(transport)`` sends ``initialize`` and yields a ``ClientConnection``; sessions are opened on it.
Each other concern of a connection sits behind one attribute, a small class of its own module: ``agent``
(``AgentView``), ``auth`` (``Authentication``), ``providers`` (``ModelProviders``), ``reconnection``
(``Reconnection``) and ``tools`` (``ClientTools``).
The package's other modules are internal: the connection's hub (``_hub``: what sessions and the protocol adapter
call), the permission and elicitation answers (``_decisions``) and session opening (``opening``).
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from .agent_view import AgentView
    from .authentication import Authentication
    from .builder import ClientBuilder, ElicitationMode
    from .client_tools import ClientTools
    from .connection import PROTOCOL_VERSION, ClientConnection, SystemPromptInput
    from .model_providers import ModelProviders
    from .permission_answers import PermissionAnswer, PermissionHandler
    from .permission_policy import PermissionDecision, PermissionPolicy, PermissionRule, ToolFacts
    from .reconnection import Reconnection

# Each export's module, imported on first use (acp_session/_lazy.py).
_EXPORTS = {
    ".agent_view": ("AgentView",),
    ".authentication": ("Authentication",),
    ".builder": ("ClientBuilder", "ElicitationMode"),
    ".client_tools": ("ClientTools",),
    ".connection": ("PROTOCOL_VERSION", "ClientConnection", "SystemPromptInput"),
    ".model_providers": ("ModelProviders",),
    ".permission_answers": ("PermissionAnswer", "PermissionHandler"),
    ".permission_policy": ("PermissionDecision", "PermissionPolicy", "PermissionRule", "ToolFacts"),
    ".reconnection": ("Reconnection",),
}
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "PROTOCOL_VERSION",
    "AgentView",
    "Authentication",
    "ClientBuilder",
    "ClientConnection",
    "ClientTools",
    "ElicitationMode",
    "ModelProviders",
    "PermissionAnswer",
    "PermissionDecision",
    "PermissionHandler",
    "PermissionPolicy",
    "PermissionRule",
    "Reconnection",
    "SystemPromptInput",
    "ToolFacts",
]
