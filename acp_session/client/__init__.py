"""The client: ``ClientBuilder`` (identity, capabilities, typed handlers) and ``ClientConnection`` (an initialized
connection to an agent, the commands a user calls).

``builder.connect(transport)`` sends ``initialize`` and yields a ``ClientConnection``; sessions are opened on it.
Each other concern of a connection sits behind one attribute, a small class of its own module: ``agent``
(``AgentView``), ``auth`` (``Authentication``), ``providers`` (``ModelProviders``), ``reconnection``
(``Reconnection``) and ``tools`` (``ClientTools``).
The package's other modules are internal: the connection's hub (``_hub``: what sessions and the protocol adapter
call), the permission and elicitation answers (``_decisions``) and session opening (``opening``).
"""

from .agent_view import AgentView
from .authentication import Authentication
from .builder import ClientBuilder, ElicitationMode
from .client_tools import ClientTools
from .connection import PROTOCOL_VERSION, ClientConnection, SystemPromptInput
from .model_providers import ModelProviders
from .permission_answers import PermissionAnswer, PermissionHandler
from .permission_policy import PermissionDecision, PermissionPolicy, PermissionRule, ToolFacts
from .reconnection import Reconnection

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
