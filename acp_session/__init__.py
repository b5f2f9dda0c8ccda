"""acp-session: a typed, fast client for the Agent Client Protocol (ACP), versions 1 and 2 behind one API."""

# Every export is imported on first use (PEP 562): a submodule's parent package is always imported first, so an
# eager facade made ``import acp_session.rpc`` (the reference agent, the conformance runner, a server) pay for the
# whole client, and a client that never opens a Conversation pay for the conversation layer.
from typing import TYPE_CHECKING, Any

from ._lazy import lazy_exports
from ._opener import set_conversation_opener
from ._version import __version__

if TYPE_CHECKING:
    from .auth import AuthenticationRequired, LoginMethod
    from .client import (
        PROTOCOL_VERSION,
        AgentView,
        Authentication,
        ClientBuilder,
        ClientConnection,
        ClientTools,
        ModelProviders,
        PermissionAnswer,
        PermissionDecision,
        PermissionHandler,
        PermissionPolicy,
        PermissionRule,
        Reconnection,
        ToolFacts,
    )
    from .client.active_session import ActiveSession
    from .client_errors import CapabilityNotSupported, ProtocolVersionMismatch, SessionClosed
    from .conversation import ChatResponse, ChatTurn, Conversation, SessionState
    from .interactions import Interaction
    from .session import TRACKED_UPDATES, BatchUpdateListener, Limits, SentRequest, TrackedPrompt

# Each export's module (relative to this package), imported on first use.
_EXPORTS = {
    ".auth": ("AuthenticationRequired", "LoginMethod"),
    ".client": (
        "PROTOCOL_VERSION",
        "AgentView",
        "Authentication",
        "ClientBuilder",
        "ClientConnection",
        "ClientTools",
        "ModelProviders",
        "PermissionAnswer",
        "PermissionDecision",
        "PermissionHandler",
        "PermissionPolicy",
        "PermissionRule",
        "Reconnection",
        "ToolFacts",
    ),
    ".client.active_session": ("ActiveSession",),
    ".client_errors": ("CapabilityNotSupported", "ProtocolVersionMismatch", "SessionClosed"),
    ".conversation": ("ChatResponse", "ChatTurn", "Conversation", "SessionState"),
    ".interactions": ("Interaction",),
    ".session": ("TRACKED_UPDATES", "BatchUpdateListener", "Limits", "SentRequest", "TrackedPrompt"),
}
if not TYPE_CHECKING:
    __getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


async def _open_conversation(client: "ClientConnection", cwd: Any, **options: Any) -> Any:
    """``ClientConnection.start_conversation``: the conversation layer builds on the client, so the facade, above
    both, hands the client this opener instead of the client importing the layer above it."""
    from .conversation.conversation import Conversation

    return await Conversation.open(client, cwd, **options)


set_conversation_opener(_open_conversation)


__all__ = [
    "PROTOCOL_VERSION",
    "TRACKED_UPDATES",
    "ActiveSession",
    "AgentView",
    "Authentication",
    "AuthenticationRequired",
    "BatchUpdateListener",
    "CapabilityNotSupported",
    "ChatResponse",
    "ChatTurn",
    "ClientBuilder",
    "ClientConnection",
    "ClientTools",
    "Conversation",
    "Interaction",
    "Limits",
    "LoginMethod",
    "ModelProviders",
    "PermissionAnswer",
    "PermissionDecision",
    "PermissionHandler",
    "PermissionPolicy",
    "PermissionRule",
    "ProtocolVersionMismatch",
    "Reconnection",
    "SentRequest",
    "SessionClosed",
    "SessionState",
    "ToolFacts",
    "TrackedPrompt",
    "__version__",
]
