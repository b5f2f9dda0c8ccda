"""The client: ``ClientBuilder`` (identity, capabilities, typed handlers) and ``ClientConnection`` (an initialized
connection to an agent, the commands a user calls).

``builder.connect(transport)`` sends ``initialize`` and yields a ``ClientConnection``; sessions are opened on it.
The package's other modules are internal: the connection's hub (``_hub``: what sessions and the protocol adapter
call), the permission and elicitation answers (``_decisions``) and session opening (``opening``).
"""

from .builder import ClientBuilder, ElicitationMode
from .connection import PROTOCOL_VERSION, ClientConnection, SystemPromptInput
from .permission_answers import PermissionAnswer, PermissionHandler
from .permission_policy import PermissionDecision, PermissionPolicy, PermissionRule, ToolFacts

__all__ = [
    "PROTOCOL_VERSION",
    "ClientBuilder",
    "ClientConnection",
    "ElicitationMode",
    "PermissionAnswer",
    "PermissionDecision",
    "PermissionHandler",
    "PermissionPolicy",
    "PermissionRule",
    "SystemPromptInput",
    "ToolFacts",
]
